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
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/forge-run/forge/internal/mask"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// EventKind names what happened to a job.
type EventKind string

// The events of a job's life.
const (
	EventStarted EventKind = "started"
	EventPhase   EventKind = "phase"
	// EventRetry: the attempt in Result ended infra; attempt Attempt of at
	// most Attempts follows in a fresh sandbox.
	EventRetry EventKind = "retry"
	EventDone  EventKind = "done"
	// EventEnvironment: environment Job's build started, printed Line, or
	// ended (Built; Err when it failed).
	EventEnvironment EventKind = "environment"
)

// Event is one step of a run, for progress displays. Handlers are called
// from many goroutines and must be safe for concurrent use.
type Event struct {
	Time    time.Time
	Kind    EventKind
	Job     string // "alpha", or "alpha#2" for later trials
	Phase   runner.Phase
	Elapsed time.Duration
	// Result is set on EventDone and EventRetry.
	Result *record.Trial
	// Attempt and Attempts are set on EventRetry.
	Attempt, Attempts int
	// Env, Line, Built and Err are set on EventEnvironment.
	Env   *runner.Environment
	Line  *string
	Built *record.EnvironmentBuilt
	Err   error
}

// Options configure one run.
type Options struct {
	Manifest *Manifest
	Plan     *Plan
	Runner   runner.Runner
	// MaxCostUSD, when positive, is what this invocation may spend (budget).
	MaxCostUSD float64
	// Judges runs the manifest's judges (a local runner, whatever runs the
	// candidates); required when the manifest has judges.
	Judges runner.Runner
	// Backend names the runner in results.json ("local", "daytona").
	Backend string
	// OutRoot is the output root (default "artifacts").
	OutRoot string
	RunID   string
	// Events receives progress; nil discards it.
	Events func(Event)
	// Echo, when set, receives every line the candidates print (--verbose).
	Echo func(job, stream, line string)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PassAtK is the k of a suite's pass@k (0 means 1).
	PassAtK int
	// Mask are values to mask as *** besides the plan's secrets (the
	// Daytona API key).
	Mask []string
	// Release, when set, is called once every job has ended.
	Release Releaser
	// MaxBuilds bounds the environments built at once (0:
	// DefaultMaxBuilds): a suite of task images builds a few at a time.
	MaxBuilds int
	// Resume, when set, is the record of an earlier run with the same RunID:
	// only its unfinished jobs are played again. Run takes it over and sets
	// its Results to nil once they are in the new trials.jsonl.
	Resume *record.Record
}

// Releaser is the backend as a run sees it at its end: it lets go of what
// it holds and names what it could not delete (Record.UndeletedSandboxes).
type Releaser interface {
	Release() (undeleted []string)
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
	if envs := o.Plan.Environments(); len(envs) > 0 {
		if _, ok := o.Runner.(runner.Builder); !ok {
			return fmt.Errorf("the %s backend cannot build environments (environment %s)", o.Backend, envs[0].Name)
		}
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
func (o *Options) Dir() string { return filepath.Join(cmp.Or(o.OutRoot, "artifacts"), o.RunID) }

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// emit sends e, at the run's clock's time, to Events.
func (o *Options) emit(e Event) {
	if o.Events != nil {
		e.Time = o.now()
		o.Events(e)
	}
}

// Run plays every job of the plan, at most Plan.Concurrency at a time, and
// writes the record and each job's files under Dir(). A failing candidate
// is data: Run returns an error only when ctx was cancelled, the backend
// is unusable (*runner.UnusableError) or results could not be written; the
// record is returned whenever results.json was written.
func Run(ctx context.Context, o Options) (*record.Record, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	// Run's own copy of the plan, whose jobs it lets go of once started:
	// at 100,000 jobs they are tens of MB.
	plan := *o.Plan
	o.Plan = &plan
	dir, err := o.makeDir()
	if err != nil {
		return nil, err
	}
	rec := newRecord(o.Manifest, o.Plan, o.RunID, o.Backend)
	rec.StartedAt = o.now().UTC()
	s := newState(&o, rec, dir, o.Plan.suite(o.PassAtK))
	if err := s.open(); err != nil {
		return nil, err
	}
	runErr := s.playAll(ctx)
	if err := s.finish(ctx); err != nil {
		return rec, err
	}
	// The caller's reports read every trial whole, from trials.jsonl;
	// what the run held for scoring goes first, collected before the
	// read-back's allocations when it is worth a collection (megabytes).
	s.sheet = nil
	if len(s.done) >= 10_000 {
		runtime.GC()
	}
	if err := s.readBack(); err != nil {
		return rec, err
	}
	return rec, cmp.Or(runErr, ctx.Err())
}

// makeDir makes the run's directory, refusing one that already has a
// record unless the run resumes it.
func (o *Options) makeDir() (string, error) {
	dir := o.Dir()
	if o.Resume == nil {
		if _, err := os.Stat(filepath.Join(dir, record.ResultsFile)); err == nil {
			return "", fmt.Errorf("run %s already has results in %s", o.RunID, dir)
		}
	} else if err := o.checkResume(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create run directory: %w", err)
	}
	return dir, nil
}

// newRecord is the record of run runID of plan, drawn from m, before any
// trial: what Run and Merge both start from.
func newRecord(m *Manifest, plan *Plan, runID, backend string) *record.Record {
	rec := &record.Record{
		SchemaVersion: record.SchemaVersion,
		RunID:         runID,
		Objective:     plan.Objective,
		Backend:       backend,
		ManifestPath:  m.Path,
		ManifestHash:  m.Hash,
		Files:         m.Files,
		Sample:        plan.Sample,
		Trials:        plan.Trials,
		Shard:         plan.Shard,
		NotRun:        plan.NotRun,
		Candidates:    plan.Candidates,
	}
	for _, t := range plan.Tasks {
		d, _ := t.Fields["difficulty"].(string)
		c, _ := t.Fields["category"].(string)
		rec.Tasks = append(rec.Tasks, record.TaskInfo{ID: t.ID, Objective: cmp.Or(t.Objective, plan.Objective), Weight: t.Weight, Difficulty: d, Category: c})
	}
	return rec
}

// newState is the bookkeeping of a run of o's plan: every job on the
// sheet by its name until it ends.
func newState(o *Options, rec *record.Record, dir string, suite scoring.Suite) *state {
	s := &state{o: o, rec: rec, dir: dir, done: make([]bool, len(o.Plan.Jobs)), lineOf: make([]int32, len(o.Plan.Jobs)), sheet: scoring.NewSheet(o.Manifest.Scoring, suite, len(o.Plan.Jobs)),
		mask: mask.New(append(o.Plan.SecretValues(), o.Mask...)...), checker: scoring.NewChecker(o.Manifest.Scoring), tasks: map[string]*scoring.Task{}}
	for i, job := range o.Plan.Jobs {
		s.sheet.Name(i, job.CandidateID, job.TaskID, job.Trial)
		s.lineOf[i] = -1
	}
	for i := range suite.Tasks {
		s.tasks[suite.Tasks[i].ID] = &suite.Tasks[i]
	}
	// Options.Validate checked that a plan with environments has a backend
	// that builds them.
	s.envs.builder, _ = o.Runner.(runner.Builder)
	s.envs.slots = make(chan struct{}, cmp.Or(o.MaxBuilds, DefaultMaxBuilds))
	s.envs.m = map[string]*envBuild{}
	s.budget = newBudget(o.MaxCostUSD)
	return s
}

// open writes the record as the run starts: results.json says what is
// under way, trials.jsonl holds the resumed run's finished jobs, and
// running.json the jobs under way.
func (s *state) open() error {
	o, rec := s.o, s.rec
	var keptAt []int
	var kept []*record.Trial
	if o.Resume != nil {
		rec.StartedAt = o.Resume.StartedAt
		rec.Sample = cmp.Or(rec.Sample, o.Resume.Sample)
		keptAt, kept = s.keepFinished(o.Resume)
	}
	if err := record.WriteSummary(filepath.Join(s.dir, record.ResultsFile), rec); err != nil {
		return err
	}
	trials, err := record.OpenTrials(s.dir, kept)
	if err != nil {
		return err
	}
	for k, i := range keptAt {
		s.done[i] = true
		s.sheet.Set(i, kept[k])
		s.placed(k, i)
	}
	s.trials = trials
	// The resumed record is in trials.jsonl now (Options.Resume); a
	// record of schema 3 leaves its journal behind.
	if o.Resume != nil {
		o.Resume.Results = nil
		os.Remove(filepath.Join(s.dir, record.JournalFile))
	}
	s.running = record.StartRunning(s.dir, o.now)
	return nil
}

// playAll plays every job not yet done, Plan.Concurrency at a time, until
// ctx is cancelled, a job fails the run or the budget is reached.
func (s *state) playAll(ctx context.Context) error {
	o := s.o
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Plan.Concurrency)
	for i := range o.Plan.Jobs {
		if gctx.Err() != nil {
			break
		}
		if s.done[i] {
			continue // finished in the run being resumed
		}
		job := o.Plan.Jobs[i]
		job.RunID = o.RunID
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil // interrupted while waiting for a slot
			}
			if !s.budget.admit(gctx, job) {
				return nil // not started: the budget is reached
			}
			return s.play(gctx, i, job)
		})
	}
	o.Plan.Jobs = nil // each job is under way or done, or never starts
	return g.Wait()
}

// finish completes the record once every job has ended: the unfinished
// jobs' lines, the scores and the whole results.json, then running.json
// goes (a run without either is not being played: Stopped).
func (s *state) finish(ctx context.Context) error {
	o, rec := s.o, s.rec
	rec.Environments = s.envs.built()
	left := s.final()
	rec.BudgetReached = s.budget.stop(len(left))
	rec.Interrupted = ctx.Err() != nil || rec.BudgetReached != nil
	out := s.sheet.Outcome()
	s.scores = out.Scores
	setOutcome(rec, out, s.sheet.Trials(out.Scores))
	if o.Release != nil {
		rec.UndeletedSandboxes = o.Release.Release()
	}
	rec.FinishedAt = o.now().UTC()
	err := cmp.Or(s.addLeft(left), s.trials.Close())
	rec.Scores = s.sheet.TrialScores(out.Scores)
	if err == nil {
		err = record.WriteSummary(filepath.Join(s.dir, record.ResultsFile), rec)
	}
	s.running.Close()
	return err
}

// state is one run's shared, mutable bookkeeping.
type state struct {
	o   *Options
	rec *record.Record
	dir string
	// running keeps running.json: the jobs under way and their phases.
	running *record.RunningWriter

	// done says which jobs have their line in trials.jsonl, in plan order.
	done []bool
	// sheet holds the finished jobs' results as scoring reads them, in
	// plan order; until a job finishes, only its name.
	sheet *scoring.Sheet
	mask  *mask.Masker
	// spent counts the trials in a row that spent all their attempts on
	// infra failures (attempts).
	spent atomic.Int32

	trials *record.TrialsWriter
	// lineOf is the job (its index in the plan) of each line of
	// trials.jsonl, -1 until written; scores are the jobs' scores once the
	// run is scored: how the read-back puts each line in its place.
	lineOf []int32
	scores []*float64
	// checker makes the artifact checks as each job ends; tasks are the
	// suite's tasks by id.
	checker *scoring.Checker
	tasks   map[string]*scoring.Task
	envs    environments
	budget  *budget // nil: no limit
}

// play runs one job, stores its files and records its result.
func (s *state) play(ctx context.Context, i int, job runner.Job) error {
	name := job.Name()
	start := time.Now()
	job.Progress = func(p runner.Phase) {
		s.running.Phase(name, p)
		s.o.emit(Event{Kind: EventPhase, Job: name, Phase: p, Elapsed: time.Since(start)})
	}
	defer s.running.Ended(name)
	if s.o.Echo != nil {
		job.Echo = func(stream, line string) { s.o.Echo(name, stream, s.mask.String(line)) }
	}
	var res record.Trial
	var err error
	if job.Environment != nil {
		// Built once, before the first job that needs it; its build is
		// the run's, not the job's (job_seconds leaves it out).
		err = s.environment(ctx, job.Environment)
	}
	switch {
	case err == nil:
		s.o.emit(Event{Kind: EventStarted, Job: name}) // not for a job its environment failed
		res, err = s.attempts(ctx, job, start)
	case ctx.Err() != nil:
		res, err = s.notStarted(job), nil
	default:
		res = failedTrial(job, s.o.Backend, runner.ErrInfra, err.Error())
		if why, ok := taskImageFailed(job, err); ok {
			// That task cannot be played; the rest of the suite can.
			res.ErrorMessage, err = why, nil
		}
	}
	if job.Environment != nil {
		res.Environment = job.Environment.Hash
		if res.Lasting {
			s.spoil(job.Environment, res.ErrorMessage)
		}
	}
	if job.AgentLog != "" {
		readAgentLog(job, &res.Result)
	}
	err = cmp.Or(err, s.store(job, &res.Result))
	if res.Success && res.ArtifactPath != "" {
		res.Judges = s.judges(ctx, job, s.stored(job, path.Base(res.ArtifactPath)))
		maskIn(s.mask, &res.Judges)
	}
	// Everything that reads the whole output has: keep the excerpts.
	res.Checks = s.checker.Check(res, s.tasks[job.TaskID])
	if t := s.tasks[job.TaskID]; t != nil {
		res.PassMark = t.PassMark
	}
	maskIn(s.mask, &res.Checks)
	res.Excerpt()
	res.Cost = s.o.Manifest.Pricing.Price(&res)
	s.budget.done(job, res.Cost)
	// Once in trials.jsonl, the job is done (else --resume plays it again).
	k, terr := s.trials.Add(&res)
	if terr == nil {
		s.placed(k, i)
	}
	err = cmp.Or(err, terr)
	s.done[i] = terr == nil // each job's own elements: g.Wait orders them before final
	s.sheet.Set(i, &res)
	s.o.emit(Event{Kind: EventDone, Job: name, Elapsed: time.Since(start), Result: &res})
	return err
}

// final puts the jobs that never finished on the sheet as not started,
// and returns their results, whose lines trials.jsonl lacks.
func (s *state) final() []*record.Trial {
	var left []*record.Trial
	for i, done := range s.done {
		if !done {
			c, t, n := s.sheet.Names(i)
			r := s.notStarted(runner.Job{CandidateID: c, TaskID: t, Trial: n})
			s.sheet.Set(i, &r)
			left = append(left, &r)
		}
	}
	return left
}

// notStarted is the result of a job the run never started.
func (s *state) notStarted(job runner.Job) record.Trial {
	why := "not started: the run was interrupted"
	if s.budget.wasReached() {
		why = "not started: the run's budget was reached"
	}
	return failedTrial(job, s.o.Backend, runner.ErrCancelled, why)
}

// failedTrial is the record of job ended as kind before its candidate ran,
// or never started.
func failedTrial(job runner.Job, backend string, kind runner.ErrorKind, msg string) record.Trial {
	t := record.Trial{Result: runner.Result{CandidateID: job.CandidateID, TaskID: job.TaskID, Trial: job.Trial, Backend: backend}}
	t.Failed(kind, msg)
	return t
}
