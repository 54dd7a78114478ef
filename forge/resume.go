package forge

// Resuming a run: which of its jobs are played again, what must not have
// changed, and what the new run keeps of the old record.

import (
	"fmt"
	"slices"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// Resumable reports whether a job's earlier result must be played again on
// resume: it says nothing about the candidate (cancelled, or the
// infrastructure failed it). A task whose verifier failed would fail again.
func Resumable(r record.Trial) bool {
	f := r.ErrorKind.Fault()
	return !r.Success && (f == runner.FaultInfra || f == runner.FaultInterrupted)
}

// checkResume refuses to resume a run whose manifest or shape changed.
func (o *Options) checkResume() error {
	r := o.Resume
	switch {
	case r.RunID != o.RunID:
		return fmt.Errorf("resume: the record is of run %s, not %s", r.RunID, o.RunID)
	case r.ManifestHash != o.Manifest.Hash:
		return fmt.Errorf("resume %s: the manifest or a file it names changed since the run (hash %s, now %s); start a new run instead",
			r.RunID, r.ManifestHash, o.Manifest.Hash)
	case r.Backend != "" && o.Backend != "" && r.Backend != o.Backend:
		return fmt.Errorf("resume %s: the run used the %s backend, not %s", r.RunID, r.Backend, o.Backend)
	case !sameShare(r.Shard, o.Plan.Shard):
		return &ShardDiffersError{RunID: r.RunID, Had: r.Shard, Want: o.Plan.Shard}
	}
	if trials := r.TrialsPerCandidate(); trials != o.Plan.Trials {
		return &TrialsDifferError{RunID: r.RunID, Had: trials, Want: o.Plan.Trials}
	}
	if had, want := r.TaskIDs(), taskIDs(o.Plan.Tasks); !slices.Equal(had, want) {
		return &TasksDifferError{RunID: r.RunID, Had: had, Want: want}
	}
	return nil
}

// keepFinished returns the finished results of the run being resumed
// (pointing into its record, not copied: a resumed run may have 100,000),
// and the plan's index of each.
func (s *state) keepFinished(prev *record.Record) (at []int, kept []*record.Trial) {
	done := map[trialKey]int{}
	for i := range prev.Results {
		if r := &prev.Results[i]; !Resumable(*r) {
			done[trialKey{r.CandidateID, r.TaskID, r.Trial}] = i
		}
	}
	for i, job := range s.o.Plan.Jobs {
		if k, ok := done[trialKey{job.CandidateID, job.TaskID, job.Trial}]; ok {
			at, kept = append(at, i), append(kept, &prev.Results[k])
		}
	}
	return at, kept
}

// trialKey names a trial.
type trialKey struct {
	candidate, task string
	trial           int
}

// TasksDifferError refuses to resume a run with other tasks (--tasks,
// --sample or the manifest's).
type TasksDifferError struct {
	RunID     string
	Had, Want []string
}

func (e *TasksDifferError) Error() string {
	return fmt.Sprintf("resume %s: the run played %d tasks, not these %d", e.RunID, len(e.Had), len(e.Want))
}

// TrialsDifferError refuses to resume a run with another number of trials.
type TrialsDifferError struct {
	RunID     string
	Had, Want int
}

func (e *TrialsDifferError) Error() string {
	return fmt.Sprintf("resume %s: the run had %d trials per candidate, not %d", e.RunID, e.Had, e.Want)
}
