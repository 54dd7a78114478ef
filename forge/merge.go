package forge

// forge merge: the records of a run's shards (--shard K/N), played on
// several machines, made into the one run they are shares of.

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// MergeOptions are what Merge needs.
type MergeOptions struct {
	// Manifest is the manifest the shards played: the record does not hold
	// the scoring, and a changed manifest is refused.
	Manifest *Manifest
	// Shards are the shards' records, Dirs their run directories (where
	// each job's files are), in the same order.
	Shards []*record.Record
	Dirs   []string
	// OutRoot and RunID: the merged run is written to OutRoot/RunID.
	OutRoot, RunID string
	// AllowPartial merges without the missing shards: their jobs are
	// recorded cancelled and the run gives no verdict.
	AllowPartial bool
}

// MergeRefusedError is a set of records Merge will not make one run of:
// not shards of one run, or some missing (without AllowPartial). Why says
// which, for those a user fixes by playing or merging otherwise.
type MergeRefusedError struct {
	Msg string
	Why MergeRefusal
}

func (e *MergeRefusedError) Error() string { return e.Msg }

// MergeRefusal is why a merge was refused, when the shards' own plays are.
type MergeRefusal int

// The refusals the command line explains.
const (
	OtherRefusal  MergeRefusal = iota
	NotAShard                  // a record of a whole run
	OtherTasks                 // shards that played other tasks
	OtherJobs                  // shards of runs of other jobs
	OtherTrials                // shards of another number of trials than the manifest plans
	ShardsMissing              // a shard not given
)

// refuse is the merge refused for why, in the words format makes.
func refuse(why MergeRefusal, format string, args ...any) error {
	return &MergeRefusedError{Msg: fmt.Sprintf(format, args...), Why: why}
}

// Merge makes one run of the shards of a run, scored as one run, with each
// job's files (hard links when possible) in OutRoot/RunID. It refuses
// (*MergeRefusedError) records that are not shards of one run of this
// manifest, a shard given twice, and a missing shard unless AllowPartial.
func Merge(o MergeOptions) (*record.Record, error) {
	if err := o.checkShards(); err != nil {
		return nil, err
	}
	at, missing, err := o.shardsAt()
	if err != nil {
		return nil, err
	}
	plan, err := o.wholePlan()
	if err != nil {
		return nil, err
	}
	results, from, err := o.gather(plan, at)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cmp.Or(o.OutRoot, "artifacts"), o.RunID)
	if _, err := os.Stat(filepath.Join(dir, record.ResultsFile)); err == nil {
		return nil, refuse(OtherRefusal, "run %s already has results in %s", o.RunID, dir)
	}
	rec := o.mergedRecord(plan, results, missing)
	if err := o.write(dir, plan, from, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// checkShards refuses records that are not shards of one run of the
// manifest.
func (o *MergeOptions) checkShards() error {
	if len(o.Shards) == 0 {
		return refuse(OtherRefusal, "no shards to merge")
	}
	if len(o.Dirs) != len(o.Shards) {
		return errors.New("merge: a directory for each shard is needed")
	}
	if !ValidID(o.RunID) {
		return refuse(OtherRefusal, "run id %q: use letters, digits, '_', '.' and '-' only", o.RunID)
	}
	first, firstDir := o.Shards[0], o.Dirs[0]
	for i, r := range o.Shards {
		dir := o.Dirs[i]
		switch {
		case r.Shard == nil:
			return refuse(NotAShard, "%s is not a shard: it played the whole run", dir)
		case r.ManifestHash != first.ManifestHash:
			return refuse(OtherRefusal, "%s and %s played different manifests (hash %s and %s)", firstDir, dir, first.ManifestHash, r.ManifestHash)
		case r.Shard.Count != first.Shard.Count:
			return refuse(OtherRefusal, "%s is shard %s, %s is shard %s: not shares of the same split", firstDir, first.Shard, dir, r.Shard)
		case !slices.Equal(r.TaskIDs(), first.TaskIDs()):
			return refuse(OtherTasks, "%s and %s played different tasks (%d and %d)",
				firstDir, dir, len(first.Tasks), len(r.Tasks))
		case r.Shard.Of != first.Shard.Of:
			return refuse(OtherJobs, "%s and %s are shards of different runs (%d and %d jobs)",
				firstDir, dir, first.Shard.Of, r.Shard.Of)
		case !slices.Equal(candidatesOf(r), candidatesOf(first)):
			return refuse(OtherRefusal, "%s and %s played different candidates (%s and %s)", firstDir, dir,
				strings.Join(candidatesOf(first), ", "), strings.Join(candidatesOf(r), ", "))
		}
	}
	if m := o.Manifest; m.Hash != first.ManifestHash {
		return refuse(OtherRefusal, "%s is not the manifest the shards played: it or a file it names changed (hash %s, the shards played %s)",
			m.Path, m.Hash, first.ManifestHash)
	}
	return nil
}

// shardsAt places each shard by its index (at: index → position in
// Shards) and lists the missing ones, refused unless AllowPartial.
func (o *MergeOptions) shardsAt() (at map[int]int, missing []record.Shard, err error) {
	count := o.Shards[0].Shard.Count
	at = map[int]int{}
	for i, r := range o.Shards {
		if j, twice := at[r.Shard.Index]; twice {
			return nil, nil, refuse(OtherRefusal, "shard %s is given twice: %s and %s", r.Shard, o.Dirs[j], o.Dirs[i])
		}
		at[r.Shard.Index] = i
	}
	for k := 1; k <= count; k++ {
		if _, ok := at[k]; !ok {
			missing = append(missing, record.Shard{Index: k, Count: count})
		}
	}
	if len(missing) > 0 && !o.AllowPartial {
		return nil, nil, refuse(ShardsMissing, "%s %s missing", ShardsText(missing), text.Plural(len(missing), "is", "are"))
	}
	return at, missing, nil
}

// wholePlan is the whole run's plan, as the shards were cut from it.
func (o *MergeOptions) wholePlan() (*Plan, error) {
	m, first := o.Manifest, o.Shards[0]
	trials := 0
	for _, r := range o.Shards {
		trials = max(trials, r.TrialsPerCandidate())
	}
	plan, err := m.Plan(Overrides{Trials: trials, Tasks: first.TaskIDs(), Only: candidatesOf(first),
		// Nothing is played: every secret is as good as set.
		Lookup: func(string) (string, bool) { return "", true }})
	if err != nil {
		return nil, refuse(OtherRefusal, "merge: %v", err)
	}
	plan.NotRun = first.NotRun
	if first.Shard.Of > 0 && first.Shard.Of != len(plan.Jobs) {
		return nil, refuse(OtherTrials, "the shards are shares of a run of %d jobs, %s plans %d (%d trials)",
			first.Shard.Of, m.Path, len(plan.Jobs), trials)
	}
	return plan, nil
}

// gather puts every shard's trials in the whole plan's order, unscored
// (they are scored again with the rest), and from says which shard each
// came from (-1: none, a missing shard's job, recorded cancelled).
func (o *MergeOptions) gather(plan *Plan, at map[int]int) (results []record.Trial, from []int, err error) {
	count := o.Shards[0].Shard.Count
	of := ShardsOf(plan.Jobs, count)
	pos := make(map[string]int, len(plan.Jobs))
	for i, j := range plan.Jobs {
		pos[jobKey(j.CandidateID, j.TaskID, j.Trial)] = i
	}
	results = make([]record.Trial, len(plan.Jobs))
	from = slices.Repeat([]int{-1}, len(plan.Jobs))
	for s, r := range o.Shards {
		for _, res := range r.Results {
			name := runner.TrialName(res.CandidateID, res.TaskID, res.Trial, plan.Trials > 1)
			i, ok := pos[jobKey(res.CandidateID, res.TaskID, res.Trial)]
			switch {
			case !ok:
				return nil, nil, refuse(OtherRefusal, "%s: %s is not a job of the run the shards are shares of", o.Dirs[s], name)
			case of[i] != r.Shard.Index:
				return nil, nil, refuse(OtherRefusal, "%s: %s belongs to shard %d/%d, not %s", o.Dirs[s], name, of[i], count, r.Shard)
			case from[i] >= 0:
				return nil, nil, refuse(OtherRefusal, "%s: %s is there twice", o.Dirs[s], name)
			}
			results[i], from[i] = res, s
			results[i].Score = nil // scored again with the rest
		}
	}
	for i, j := range plan.Jobs {
		if from[i] >= 0 {
			continue
		}
		sh := record.Shard{Index: of[i], Count: count}
		if s, ok := at[sh.Index]; ok {
			return nil, nil, refuse(OtherRefusal, "%s (shard %s) has no result for %s", o.Dirs[s], sh, j.Name())
		}
		results[i] = failedTrial(j, o.Shards[0].Backend, runner.ErrCancelled, "shard "+sh.String()+" not merged")
	}
	return results, from, nil
}

// mergedRecord is the whole run's record, scored: from its first shard
// start to its last one's end, interrupted if any shard was.
func (o *MergeOptions) mergedRecord(plan *Plan, results []record.Trial, missing []record.Shard) *record.Record {
	first := o.Shards[0]
	rec := newRecord(o.Manifest, plan, o.RunID, backendsOf(o.Shards))
	// The tasks and their sample as the shards drew them.
	rec.Tasks, rec.Sample = first.Tasks, first.Sample
	rec.StartedAt, rec.FinishedAt = first.StartedAt, first.FinishedAt
	rec.MissingShards, rec.Results = missing, results
	for _, r := range o.Shards {
		if r.StartedAt.Before(rec.StartedAt) {
			rec.StartedAt = r.StartedAt
		}
		if r.FinishedAt.After(rec.FinishedAt) {
			rec.FinishedAt = r.FinishedAt
		}
		rec.Interrupted = rec.Interrupted || r.Interrupted
		rec.UndeletedSandboxes = append(rec.UndeletedSandboxes, r.UndeletedSandboxes...)
	}
	score(rec, o.Manifest.Scoring, plan.suite(passAtKOf(first)))
	return rec
}

// write writes the merged run in dir: each merged job's files, linked
// from its shard's, then its record.
func (o *MergeOptions) write(dir string, plan *Plan, from []int, rec *record.Record) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create run directory: %w", err)
	}
	for i, j := range plan.Jobs {
		if from[i] < 0 {
			continue
		}
		rel := jobDir(j, plan.Trials)
		if err := linkTree(filepath.Join(o.Dirs[from[i]], rel), filepath.Join(dir, rel)); err != nil {
			return fmt.Errorf("merge the files of %s: %w", j.Name(), err)
		}
	}
	path := filepath.Join(dir, record.ResultsFile)
	if err := record.Write(path, rec); err != nil {
		return err
	}
	record.WriteIndex(path) // for the run's first reader; one that lacks it makes it
	return nil
}

// candidatesOf lists, sorted, the candidates a record's run played: those
// with a standing or a result.
func candidatesOf(r *record.Record) []string {
	var ids []string
	for _, s := range r.Standings {
		ids = append(ids, s.CandidateID)
	}
	for _, res := range r.Results {
		ids = append(ids, res.CandidateID)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// backendsOf is the shards' backend, or theirs joined with "+" when they
// differ (a shard fell back to local).
func backendsOf(shards []*record.Record) string {
	var names []string
	for _, r := range shards {
		if r.Backend != "" {
			names = append(names, r.Backend)
		}
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), "+")
}

// passAtKOf is the k of a record's pass@k (1 when it has none).
func passAtKOf(r *record.Record) int {
	for _, s := range r.Standings {
		if s.Suite != nil && s.Suite.K > 0 {
			return s.Suite.K
		}
	}
	return 1
}

// linkTree puts the files under src at the same places under dst: hard
// links when the file system allows, copies otherwise. A src that does not
// exist (a job that never started) has no files.
func linkTree(src, dst string) error {
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return nil // forge writes plain files only
		}
		if err := os.Link(path, to); err == nil {
			return nil
		}
		return copyFile(path, to)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}
