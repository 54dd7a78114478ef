package forge

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/forge-run/forge/internal/mask"
	"github.com/forge-run/forge/runner"
)

// EventKind names what happened to a job.
type EventKind string

// The events of a job's life.
const (
	EventStarted EventKind = "started"
	EventPhase   EventKind = "phase"
	EventDone    EventKind = "done"
)

// Event is one step of a run, for progress displays. Handlers are called
// from many goroutines and must be safe for concurrent use.
type Event struct {
	Time    time.Time
	Kind    EventKind
	Job     string // "alpha", or "alpha#2" for later trials
	Phase   runner.Phase
	Elapsed time.Duration
	// Result is set on EventDone.
	Result *runner.Result
}

// Options configure one run.
type Options struct {
	Manifest *Manifest
	Plan     *Plan
	Runner   runner.Runner
	// Judges runs the manifest's judges as plain jobs (runner.Job.Dir): a
	// local runner (runner/local), whatever runs the candidates. Required
	// when the manifest has judges.
	Judges runner.Runner
	// Backend names the runner in results.json ("local", "daytona").
	Backend string
	// OutRoot is the output root (default "artifacts"); the run writes to
	// OutRoot/RunID.
	OutRoot string
	RunID   string
	// Events receives progress; nil discards it.
	Events func(Event)
	// Echo, when set, receives every line the candidates print as they
	// print it (--verbose); job is as in Event.Job.
	Echo func(job, stream, line string)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// FlushEvery bounds how often partial results.json is rewritten while
	// jobs finish (default 1s); the final write always happens.
	FlushEvery time.Duration
	// PassAtK is the k of a suite's pass@k (0 means 1).
	PassAtK int
	// Mask are values to mask besides the plan's secrets (the Daytona API
	// key): in everything forge writes or prints that came from a
	// candidate or a judge, each is ***.
	Mask []string
	// Resume, when set, is the record of an earlier run with the same RunID:
	// its finished jobs are kept and only the rest (cancelled, infra, or
	// missing) are played again, into the same directory.
	Resume *Record
}

// Resumable reports whether a job's earlier result must be played again on
// resume: it says nothing about the candidate (cancelled, or the
// infrastructure failed it).
func Resumable(r runner.Result) bool {
	return !r.Success && !r.ErrorKind.Scored()
}

// Validate checks that the options can make a run.
func (o *Options) Validate() error {
	switch {
	case o.Manifest == nil || o.Plan == nil:
		return errors.New("run: no manifest or plan")
	case o.Runner == nil:
		return errors.New("run: no runner")
	case o.Judges == nil && len(o.Manifest.Scoring.Judges()) > 0:
		return errors.New("run: the manifest has judges but there is no runner for them")
	case !ValidID(o.RunID):
		return fmt.Errorf("run id %q: use letters, digits, '_', '.' and '-' only", o.RunID)
	case o.Plan.Concurrency < 1:
		return errors.New("run: concurrency must be at least 1")
	}
	return nil
}

// NewRunID returns a fresh run id such as 20261121-153000-ab12.
func NewRunID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Dir is where a run writes: OutRoot/RunID.
func (o *Options) Dir() string { return filepath.Join(o.outRoot(), o.RunID) }

func (o *Options) outRoot() string {
	if o.OutRoot == "" {
		return "artifacts"
	}
	return o.OutRoot
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o *Options) emit(e Event) {
	if o.Events != nil {
		o.Events(e)
	}
}

// Run plays every job of the plan, at most Plan.Concurrency at a time, and
// writes results.json (also while jobs finish, and when interrupted) plus each
// job's artifact and logs under Dir().
//
// A failing candidate is data. Run returns an error only when the run could
// not be completed: ctx was cancelled (the record then holds every finished
// job and marks the rest cancelled), the runner reported the backend unusable
// (*runner.UnusableError), or results could not be written. The record is
// returned whenever results.json was written.
func Run(ctx context.Context, o Options) (*Record, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	dir := o.Dir()
	if o.Resume == nil {
		if _, err := os.Stat(filepath.Join(dir, ResultsFile)); err == nil {
			return nil, fmt.Errorf("run %s already has results in %s", o.RunID, dir)
		}
	} else if err := o.checkResume(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	rec := &Record{
		SchemaVersion: SchemaVersion,
		RunID:         o.RunID,
		Objective:     o.Plan.Objective,
		Backend:       o.Backend,
		ManifestPath:  o.Manifest.Path,
		ManifestHash:  o.Manifest.Hash,
		StartedAt:     o.now().UTC(),
		Sample:        o.Plan.Sample,
		NotRun:        o.Plan.NotRun,
	}
	for _, t := range o.Plan.Tasks {
		rec.Tasks = append(rec.Tasks, TaskInfo{ID: t.ID, Objective: cmp.Or(t.Objective, o.Plan.Objective), Weight: t.Weight})
	}
	s := &state{o: &o, rec: rec, dir: dir, results: make([]*runner.Result, len(o.Plan.Jobs)), mask: o.masker()}
	if o.Resume != nil {
		rec.StartedAt = o.Resume.StartedAt
		rec.Sample = cmp.Or(rec.Sample, o.Resume.Sample)
		s.keepFinished(o.Resume)
	}
	if err := s.flush(true); err != nil {
		return nil, err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Plan.Concurrency)
	for i := range o.Plan.Jobs {
		if gctx.Err() != nil {
			break
		}
		if s.results[i] != nil {
			continue // finished in the run being resumed
		}
		job := o.Plan.Jobs[i]
		job.RunID = o.RunID
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil // interrupted while waiting for a slot
			}
			return s.play(gctx, i, job)
		})
	}
	runErr := g.Wait()
	s.stopPartial()

	rec.Interrupted = ctx.Err() != nil
	rec.Results = s.final()
	rec.score(o.Manifest.Scoring, o.Plan.suite(o.PassAtK))
	rec.FinishedAt = o.now().UTC()
	if err := s.flush(true); err != nil {
		return rec, err
	}
	switch {
	case runErr != nil:
		return rec, runErr
	case ctx.Err() != nil:
		return rec, ctx.Err()
	}
	return rec, nil
}

// state is one run's shared, mutable bookkeeping.
type state struct {
	o   *Options
	rec *Record
	dir string

	mu      sync.Mutex
	results []*runner.Result
	mask    *mask.Masker

	// flushing is held while results.json is written; lastFlush and
	// flushCost (when the last write began, and how long it took) and
	// stopped (no more partial writes: the jobs are over) are only touched
	// under it.
	flushing  sync.Mutex
	lastFlush time.Time
	flushCost time.Duration
	stopped   bool
	// pending: a partial write is scheduled (under mu), with after (nil:
	// time.AfterFunc).
	pending bool
	after   func(time.Duration, func())
}

// flushShare: a partial results.json is written at most once per 20 times
// the last write took, so that writing a growing record (5,000 results
// take ~0.1 s to encode) never takes more than about 5% of the run.
const flushShare = 20

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
	}
	trials := 0
	for _, res := range r.Results {
		trials = max(trials, res.Trial)
	}
	if trials != o.Plan.Trials {
		return &TrialsDifferError{RunID: r.RunID, Had: trials, Want: o.Plan.Trials}
	}
	if had, want := r.TaskIDs(), taskIDs(o.Plan.Tasks); !slices.Equal(had, want) {
		return &TasksDifferError{RunID: r.RunID, Had: had, Want: want}
	}
	return nil
}

// keepFinished takes the finished results of the run being resumed.
func (s *state) keepFinished(prev *Record) {
	type key struct {
		id, task string
		trial    int
	}
	done := map[key]runner.Result{}
	for _, r := range prev.Results {
		if !Resumable(r) {
			done[key{r.CandidateID, r.TaskID, r.Trial}] = r
		}
	}
	for i, job := range s.o.Plan.Jobs {
		if r, ok := done[key{job.CandidateID, job.TaskID, job.Trial}]; ok {
			r.Score = nil // scored again with the rest
			s.results[i] = &r
		}
	}
}

// play runs one job, stores its files and records its result.
func (s *state) play(ctx context.Context, i int, job runner.Job) error {
	name := job.Name()
	start := time.Now()
	job.Progress = func(p runner.Phase) {
		s.o.emit(Event{Time: s.o.now(), Kind: EventPhase, Job: name, Phase: p, Elapsed: time.Since(start)})
	}
	if s.o.Echo != nil {
		job.Echo = func(stream, line string) { s.o.Echo(name, stream, s.mask.String(line)) }
	}
	s.o.emit(Event{Time: s.o.now(), Kind: EventStarted, Job: name})
	res, err := s.o.Runner.Run(ctx, job)
	res.CandidateID, res.TaskID, res.Trial = job.CandidateID, job.TaskID, job.Trial
	maskResult(s.mask, &res)
	if res.Backend == "" {
		res.Backend = s.o.Backend
	}
	if werr := s.store(job, &res); werr != nil && err == nil {
		err = werr
	}
	if res.Success && res.ArtifactPath != "" {
		// The manifest's judges, if any, on the stored artifact.
		res.Judges = s.judge(ctx, job, s.stored(job, path.Base(res.ArtifactPath)))
		maskJudges(s.mask, res.Judges)
	}
	s.mu.Lock()
	s.results[i] = &res
	s.mu.Unlock()
	s.o.emit(Event{Time: s.o.now(), Kind: EventDone, Job: name, Elapsed: time.Since(start), Result: &res})
	if ferr := s.flush(false); ferr != nil && err == nil {
		err = ferr
	}
	return err
}

// jobDir is <run>/<candidate>[/<task>][/trial-N]: the task in a suite,
// the trial when there are several.
func (s *state) jobDir(job runner.Job) string {
	dir := filepath.Join(job.CandidateID, job.TaskID)
	if s.o.Plan.Trials > 1 {
		dir = filepath.Join(dir, "trial-"+strconv.Itoa(job.Trial))
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

// final returns every job's result in plan order; jobs that never finished
// are marked cancelled.
func (s *state) final() []runner.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]runner.Result, len(s.results))
	for i, r := range s.results {
		if r != nil {
			out[i] = *r
			continue
		}
		job := s.o.Plan.Jobs[i]
		out[i] = runner.Result{CandidateID: job.CandidateID, TaskID: job.TaskID, Trial: job.Trial, Backend: s.o.Backend}
		out[i].Failed(runner.ErrCancelled, "not started: the run was interrupted")
	}
	return out
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
