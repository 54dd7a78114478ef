package forge

// What a run writes in its directory besides its record: each job's files,
// as the job ends.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/forge-run/forge/runner"
)

// jobDir is the directory of a job's files, relative to its run's, in a
// run of trials trials: <candidate>[/<task>][/trial-N], the task in a
// suite, the trial when there are several.
func jobDir(job runner.Job, trials int) string {
	dir := filepath.Join(job.CandidateID, job.TaskID)
	if trials > 1 {
		dir = filepath.Join(dir, "trial-"+strconv.Itoa(job.Trial))
	}
	return dir
}

// taskFile is the name under which store keeps a suite's task beside the
// job's logs, and transcriptFile the candidate's transcript
// (FORGE_TRANSCRIPT).
const (
	taskFile        = "task.json"
	transcriptFile  = "transcript.jsonl"
	verifierLogFile = "verifier.log"
)

// store writes the job's logs, its task, its transcript and its artifact
// beside results.json.
func (s *state) store(job runner.Job, res *runner.Result) error {
	rel := jobDir(job, s.o.Plan.Trials)
	abs := filepath.Join(s.dir, rel)
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("store results of %s: %w", job.Name(), err)
	}
	var task []byte
	for _, f := range job.Files {
		if f.Dst == runner.TaskFile {
			task = f.Data
		}
	}
	artifact := filepath.Base(filepath.FromSlash(job.EffectiveOutputFile()))
	if artifact == "stdout.log" || artifact == "stderr.log" || artifact == taskFile || artifact == transcriptFile || artifact == verifierLogFile {
		artifact = "artifact-" + artifact
	}
	for _, f := range []struct {
		name string
		data []byte
		path *string
	}{
		{"stdout.log", []byte(res.Output), &res.OutputPath}, // never nil: written even empty
		{"stderr.log", []byte(res.Stderr), &res.StderrPath},
		{taskFile, task, nil}, // no field of the record names it
		{transcriptFile, res.Transcript, &res.TranscriptPath},
		{verifierLogFile, res.VerifierLog, &res.VerifierLogPath},
		{artifact, res.Artifact, &res.ArtifactPath},
	} {
		if f.data == nil {
			continue
		}
		if err := writeJobFile(filepath.Join(abs, f.name), f.data); err != nil {
			return err
		}
		if f.path != nil {
			*f.path = filepath.ToSlash(filepath.Join(rel, f.name))
		}
	}
	return nil
}

// writeJobFile writes one of a job's files plainly: a job not yet in
// trials.jsonl is played again by --resume. A file already there is
// removed first, never written over: a merged run may hold a link to it.
func writeJobFile(path string, data []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
