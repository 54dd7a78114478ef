package forge

// What a run writes in its directory: each job's files as it ends, and
// results.json, partial while jobs run and whole at the end.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/forge-run/forge/runner"
)

// flushShare: a partial results.json is written at most once per 20 times
// the last write took, so that writing a growing record (5,000 results
// take ~0.1 s to encode) never takes more than about 5% of the run.
const flushShare = 20

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
// job's logs.
const taskFile = "task.json"

// store writes the job's logs, its task and its artifact beside
// results.json.
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
	for _, f := range job.Files {
		if f.Dst == runner.TaskFile {
			if err := writeJobFile(filepath.Join(abs, taskFile), f.Data); err != nil {
				return err
			}
		}
	}
	if res.Artifact != nil {
		name := filepath.Base(filepath.FromSlash(job.EffectiveOutputFile()))
		if name == "stdout.log" || name == "stderr.log" || name == taskFile {
			name = "artifact-" + name
		}
		if err := writeJobFile(filepath.Join(abs, name), res.Artifact); err != nil {
			return err
		}
		res.ArtifactPath = filepath.ToSlash(filepath.Join(rel, name))
	}
	return nil
}

// flush writes results.json: always when force, otherwise at most once per
// FlushEvery (and per flushShare times the last write's cost), and not
// while another write is under way, so that a run of many short jobs does
// not spend its time rewriting a growing file; a partial write put off is
// scheduled (later), so that a finished job is on disk within that time
// even when no other job finishes after it. Jobs go on meanwhile: the
// record is encoded and written outside s.mu.
func (s *state) flush(force bool) error {
	every := s.o.FlushEvery
	if every <= 0 {
		every = time.Second
	}
	if force {
		s.flushing.Lock()
	} else if !s.flushing.TryLock() {
		s.later(every) // the write under way may not have this job
		return nil
	}
	defer s.flushing.Unlock()
	if !force {
		if s.stopped {
			return nil
		}
		if wait := max(every, flushShare*s.flushCost) - time.Since(s.lastFlush); wait > 0 {
			s.later(wait)
			return nil
		}
	}
	s.lastFlush = time.Now()
	s.mu.Lock()
	snap := *s.rec
	if !force {
		snap.Results = nil
		for _, r := range s.results {
			if r != nil {
				snap.Results = append(snap.Results, *r)
			}
		}
	}
	s.mu.Unlock()
	if snap.Results == nil {
		snap.Results = []runner.Result{}
	}
	b, err := MarshalRecord(&snap)
	if err == nil {
		err = writeFileAtomic(filepath.Join(s.dir, ResultsFile), b)
	}
	s.flushCost = time.Since(s.lastFlush)
	return err
}

// later makes a partial write, unless one is scheduled already, after d.
// A write that fails then fails again at the next flush, which reports it.
func (s *state) later(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending {
		return
	}
	s.pending = true
	write := func() {
		s.mu.Lock()
		s.pending = false
		s.mu.Unlock()
		_ = s.flush(false)
	}
	if s.after != nil {
		s.after(d, write)
		return
	}
	time.AfterFunc(d, write)
}

// stopPartial ends the partial writes, once the jobs are over and before
// the record is finished: a scheduled one then writes nothing.
func (s *state) stopPartial() {
	s.flushing.Lock()
	s.stopped = true
	s.flushing.Unlock()
}

// writeJobFile writes one of a job's files (its logs, its artifact) in the
// job's own directory, plainly: nothing reads them before results.json
// names the job, and a job that results.json does not name is run again by
// --resume, which writes them anew.
func writeJobFile(path string, data []byte) error {
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
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
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
