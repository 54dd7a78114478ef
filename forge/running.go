package forge

import (
	"cmp"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/forge-run/forge/runner"
)

// RunningFile, beside results.json while a run plays, lists the jobs
// under way and the phase each is in (docs/results.md), for whoever
// watches the run's directory (forge view): rewritten whole at most every
// runningTick when something changed, removed when the run ends.
const RunningFile = "running.json"

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

// running keeps RunningFile.
type running struct {
	path  string
	now   func() time.Time
	mu    sync.Mutex
	jobs  map[string]RunningJob
	dirty bool
	stop  chan struct{}
	done  chan struct{}
}

func startRunning(dir string, now func() time.Time) *running {
	r := &running{path: filepath.Join(dir, RunningFile), now: now, jobs: map[string]RunningJob{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t := time.NewTicker(runningTick)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.write()
			}
		}
	}()
	return r
}

// phase records that job is in phase p (started when first seen).
func (r *running) phase(job string, p runner.Phase) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[job]
	if !ok {
		j = RunningJob{Job: job, StartedAt: r.now()}
	}
	j.Phase = p
	r.jobs[job], r.dirty = j, true
}

// ended records that job is no longer under way.
func (r *running) ended(job string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.jobs, job)
	r.dirty = true
}

// write rewrites the file when something changed since the last write.
func (r *running) write() {
	r.mu.Lock()
	if !r.dirty {
		r.mu.Unlock()
		return
	}
	now := Running{UpdatedAt: r.now().UTC(), Jobs: make([]RunningJob, 0, len(r.jobs))}
	for _, j := range r.jobs {
		now.Jobs = append(now.Jobs, j)
	}
	r.dirty = false
	r.mu.Unlock()
	slices.SortFunc(now.Jobs, func(a, b RunningJob) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), strings.Compare(a.Job, b.Job))
	})
	// Best effort: a watcher's view, never the run's record.
	WriteAtomic(r.path, func(w io.Writer) error { return json.NewEncoder(w).Encode(now) }) //nolint:errcheck
}

// close stops the writes and removes the file.
func (r *running) close() {
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
