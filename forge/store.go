package forge

// What a run writes in its directory besides its record: each job's files,
// as the job ends.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/forge-run/forge/runner"
)

// jobDir is <run>/<candidate>[/<task>][/trial-N]: the task in a suite,
// the trial when there are several.
func (s *state) jobDir(job runner.Job) string {
	return jobRelDir(job.CandidateID, job.TaskID, job.Trial, s.o.Plan.Trials)
}

// jobRelDir is the directory of a job's files, relative to its run's, in
// a run of trials trials.
func jobRelDir(candidate, task string, trial, trials int) string {
	dir := filepath.Join(candidate, task)
	if trials > 1 {
		dir = filepath.Join(dir, "trial-"+strconv.Itoa(trial))
	}
	return dir
}

// taskFile is the name under which store keeps a suite's task beside the
// job's logs, and transcriptFile the candidate's transcript
// (FORGE_TRANSCRIPT).
const (
	taskFile       = "task.json"
	transcriptFile = "transcript.jsonl"
)

// store writes the job's logs, its task, its transcript and its artifact
// beside results.json.
func (s *state) store(job runner.Job, res *runner.Result) error {
	rel := s.jobDir(job)
	abs := filepath.Join(s.dir, rel)
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("store results of %s: %w", job.Name(), err)
	}
	if err := writeJobFile(filepath.Join(abs, "stdout.log"), []byte(res.Output)); err != nil {
		return err
	}
	if err := writeJobFile(filepath.Join(abs, "stderr.log"), []byte(res.Stderr)); err != nil {
		return err
	}
	res.OutputPath = filepath.ToSlash(filepath.Join(rel, "stdout.log"))
	res.StderrPath = filepath.ToSlash(filepath.Join(rel, "stderr.log"))
	for _, f := range job.Files {
		if f.Dst == runner.TaskFile {
			if err := writeJobFile(filepath.Join(abs, taskFile), f.Data); err != nil {
				return err
			}
		}
	}
	if res.Transcript != nil {
		if err := writeJobFile(filepath.Join(abs, transcriptFile), res.Transcript); err != nil {
			return err
		}
		res.TranscriptPath = filepath.ToSlash(filepath.Join(rel, transcriptFile))
	}
	if res.Artifact != nil {
		name := filepath.Base(filepath.FromSlash(job.EffectiveOutputFile()))
		if name == "stdout.log" || name == "stderr.log" || name == taskFile || name == transcriptFile {
			name = "artifact-" + name
		}
		if err := writeJobFile(filepath.Join(abs, name), res.Artifact); err != nil {
			return err
		}
		res.ArtifactPath = filepath.ToSlash(filepath.Join(rel, name))
	}
	return nil
}

// writeJobFile writes one of a job's files (its logs, its artifact) in the
// job's own directory, plainly: nothing reads them before the journal
// names the job, and a job that the journal does not name is run again by
// --resume, which writes them anew. A file already there is removed first,
// never written over: a merged run (forge merge) may hold a link to it.
func writeJobFile(path string, data []byte) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file and a rename,
// so readers never see half a file.
func writeFileAtomic(path string, data []byte) error {
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomic writes what write writes to path through a temporary file
// and a rename, so readers never see half a file.
func WriteAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	werr := write(f)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
