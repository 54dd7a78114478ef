package record

import (
	"cmp"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/forge-run/forge/runner"
)

// RunningFile, beside results.json while a run plays, lists the jobs under
// way and their phases (docs/results.md) for watchers (forge view); it is
// removed once results.json is whole.
const RunningFile = "running.json"

// RunningBeat is how often, at the least, a run rewrites RunningFile
// while it plays: its sign of life.
const RunningBeat = 5 * time.Second

// Stopped reports whether forge no longer plays the unfinished run in dir
// (its last sign of life, also returned, is over six beats old). It says
// nothing of a finished run.
func Stopped(dir string, now time.Time) (bool, time.Time) {
	var last time.Time
	if r := ReadRunning(dir); r != nil {
		last = r.UpdatedAt
	} else if fi, err := os.Stat(filepath.Join(dir, ResultsFile)); err == nil {
		last = fi.ModTime()
	} else {
		return false, last
	}
	return now.Sub(last) > 6*RunningBeat, last
}

// Running is what RunningFile holds.
type Running struct {
	UpdatedAt time.Time    `json:"updated_at"`
	Jobs      []RunningJob `json:"jobs"`
}

// RunningJob is a job under way: its name (as progress names it), its
// phase and when it started.
type RunningJob struct {
	Job       string       `json:"job"`
	Phase     runner.Phase `json:"phase"`
	StartedAt time.Time    `json:"started_at"`
}

// runningTick is how often RunningFile may be rewritten.
const runningTick = 250 * time.Millisecond

// RunningWriter keeps RunningFile while a run plays.
type RunningWriter struct {
	path  string
	now   func() time.Time
	mu    sync.Mutex
	jobs  map[string]RunningJob
	dirty bool
	stop  chan struct{}
	done  chan struct{}
}

// StartRunning writes dir's RunningFile, with no job yet, and keeps it:
// rewritten when a job's phase changes (at most every quarter second) and
// at least every RunningBeat, until Close. now is the run's clock.
func StartRunning(dir string, now func() time.Time) *RunningWriter {
	r := &RunningWriter{path: filepath.Join(dir, RunningFile), now: now, jobs: map[string]RunningJob{},
		stop: make(chan struct{}), done: make(chan struct{})}
	r.write(true)
	go func() {
		defer close(r.done)
		t := time.NewTicker(runningTick)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-r.stop:
				return
			case now := <-t.C:
				if r.write(now.Sub(last) >= RunningBeat) {
					last = now
				}
			}
		}
	}()
	return r
}

// Phase records that job is in phase p (started when first seen).
func (r *RunningWriter) Phase(job string, p runner.Phase) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[job]
	if !ok {
		j = RunningJob{Job: job, StartedAt: r.now()}
	}
	j.Phase = p
	r.jobs[job], r.dirty = j, true
}

// Ended records that job is no longer under way.
func (r *RunningWriter) Ended(job string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.jobs, job)
	r.dirty = true
}

// write rewrites the file when something changed since the last write,
// or when beat says it is time for a sign of life, and reports whether it
// wrote it.
func (r *RunningWriter) write(beat bool) bool {
	r.mu.Lock()
	if !r.dirty && !beat {
		r.mu.Unlock()
		return false
	}
	now := Running{UpdatedAt: r.now().UTC(), Jobs: slices.AppendSeq(make([]RunningJob, 0, len(r.jobs)), maps.Values(r.jobs))}
	r.dirty = false
	r.mu.Unlock()
	slices.SortFunc(now.Jobs, func(a, b RunningJob) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), strings.Compare(a.Job, b.Job))
	})
	// Best effort: a watcher's view, never the run's record.
	WriteAtomic(r.path, func(w io.Writer) error { return json.NewEncoder(w).Encode(now) }) //nolint:errcheck
	return true
}

// Close stops the writes and removes the file.
func (r *RunningWriter) Close() {
	close(r.stop)
	<-r.done
	os.Remove(r.path)
}

// ReadRunning reads a run's RunningFile in dir; nil when there is none.
func ReadRunning(dir string) *Running {
	b, err := os.ReadFile(filepath.Join(dir, RunningFile))
	if err != nil {
		return nil
	}
	var r Running
	if json.Unmarshal(b, &r) != nil {
		return nil
	}
	return &r
}
