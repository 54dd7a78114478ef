package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/forge-run/forge/runner"
)

// Defaults of Options.
const (
	DefaultKillGrace = 2 * time.Second
	// DefaultMaxProcs caps the tasks (processes and threads) of one job
	// where a pids cgroup is available.
	DefaultMaxProcs = 1024
	// defaultPath is the candidate's PATH when forge has none.
	defaultPath = "/usr/local/bin:/usr/bin:/bin"
)

// Backend is the Result.Backend of every job run here.
const Backend = "local"

// Options configure a Runner.
type Options struct {
	// TempDir is the parent of the jobs' working directories; empty means
	// os.TempDir().
	TempDir string
	// KillGrace is how long a candidate has between SIGTERM and SIGKILL when
	// it times out or the run is cancelled; zero means DefaultKillGrace. It is
	// also how long forge keeps reading the output of a finished process
	// whose pipes something it could not end still holds.
	KillGrace time.Duration
	// Getenv reads forge's own environment, of which the candidate gets only
	// PATH and LANG; nil means os.Getenv.
	Getenv func(string) string
	// Containment picks how a job's processes are held together; empty means
	// the strongest this machine allows (see the package doc). Naming a tier
	// makes New fail when it is not available.
	Containment Containment
	// MaxProcs caps the tasks one job may have at once where a pids cgroup
	// is available (the pidns and cgroup tiers); zero means DefaultMaxProcs.
	MaxProcs int
	// EnvCache is where environments are built (BuildEnvironment), each in
	// a directory named by its short hash; empty means DefaultEnvCache().
	// It is made when the first environment is built.
	EnvCache string
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	var errs []error
	if o.KillGrace < 0 {
		errs = append(errs, fmt.Errorf("kill grace %s is negative", o.KillGrace))
	}
	if o.MaxProcs < 0 {
		errs = append(errs, fmt.Errorf("max procs %d is negative", o.MaxProcs))
	}
	if !o.Containment.valid() {
		errs = append(errs, fmt.Errorf("unknown containment %q (want pidns, cgroup, pgroup or process)", o.Containment))
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	if o.KillGrace == 0 {
		o.KillGrace = DefaultKillGrace
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.MaxProcs == 0 {
		o.MaxProcs = DefaultMaxProcs
	}
	return o
}

// Runner runs jobs as local processes, each in a fresh working directory and
// contained so that nothing it starts outlives it. It is safe for concurrent
// use.
type Runner struct {
	opts     Options
	platform *platform
	// found caches where a bare command name was found on a PATH (the
	// interpreter every job of a run names: python3, bash).
	found sync.Map
	// removers holds a token per working directory being removed in the
	// background; Close takes them all (one Close at a time: closing).
	removers chan struct{}
	closing  sync.Mutex

	// envs are the environments BuildEnvironment was asked for, by hash;
	// turns say which goroutine makes each ready.
	envMu sync.Mutex
	envs  map[string]*envState
	turns runner.Turns
	// onEnvWait, when set (by tests), is called when BuildEnvironment
	// waits for another goroutine making the same environment ready.
	onEnvWait func()
}

// backgroundRemovers is how many working directories may be being removed
// at once after their Run returned; when that many are, Run removes its own
// before returning.
const backgroundRemovers = 2

var _ runner.Runner = (*Runner)(nil)

// New checks opts, that TempDir is usable and which containment this machine
// allows.
func New(opts Options) (*Runner, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("local runner options: %w", err)
	}
	opts = opts.withDefaults()
	abs, err := filepath.Abs(opts.TempDir)
	if err != nil {
		return nil, fmt.Errorf("local runner temp dir %s: %w", opts.TempDir, err)
	}
	opts.TempDir = abs
	if opts.EnvCache != "" {
		if opts.EnvCache, err = filepath.Abs(opts.EnvCache); err != nil {
			return nil, fmt.Errorf("local runner environment cache: %w", err)
		}
	}
	probeDir, err := os.MkdirTemp(opts.TempDir, "forge-probe-")
	if err != nil {
		return nil, fmt.Errorf("local runner temp dir %s is not writable: %w", opts.TempDir, err)
	}
	if err := os.Remove(probeDir); err != nil {
		return nil, fmt.Errorf("local runner temp dir %s: %w", opts.TempDir, err)
	}
	removeStale(opts.TempDir, removeAll)
	p, err := probe(opts.Containment, opts.MaxProcs, opts.TempDir)
	if err != nil {
		return nil, fmt.Errorf("local runner: %w", err)
	}
	return &Runner{opts: opts, platform: p, removers: make(chan struct{}, backgroundRemovers)}, nil
}

// Close waits until the working directories of the jobs that returned
// before it are removed, and lets go of the environments BuildEnvironment
// made ready (forge gc may remove them then). A Runner stays usable after
// Close, and Close may be called while jobs run; a job in an environment
// needs BuildEnvironment again first.
func (r *Runner) Close() error {
	r.closing.Lock()
	defer r.closing.Unlock()
	r.releaseEnvironments()
	for range cap(r.removers) { // each returns once its removal is done
		r.removers <- struct{}{}
	}
	for range cap(r.removers) {
		<-r.removers
	}
	return nil
}

// removeWorkdir removes a finished job's working directory, whose
// processes are all gone: in the background when a remover is free (on a
// slow file system that is most of a millisecond the next job need not
// wait for), else at once.
func (r *Runner) removeWorkdir(dir string) {
	select {
	case r.removers <- struct{}{}:
		go func() {
			defer func() { <-r.removers }()
			_ = removeAll(dir)
		}()
	default:
		_ = removeAll(dir)
	}
}

// Containment is the tier the runner's jobs get.
func (r *Runner) Containment() Containment { return r.platform.tier }

// PidsLimit is the cap on one job's tasks, or 0 when none is enforced.
func (r *Runner) PidsLimit() int { return r.platform.pidsLimit() }

// ReadOnlyEnvironments reports whether jobs see the environment cache
// read-only here (a mount namespace each; see the package doc), rather
// than writable.
func (r *Runner) ReadOnlyEnvironments() bool { return r.platform.readOnly() }

// Describe says in one line how jobs are contained here and why stronger
// tiers were not used, for `forge doctor` and --verbose.
func (r *Runner) Describe() string { return r.platform.describe() }

// Run runs job in a fresh working directory and removes it afterwards
// (possibly just after it returns: Close waits for that). It
// returns an error only when the machine cannot run jobs at all (TempDir
// unusable, containment failing); a failing candidate is recorded in the
// Result. A job in an environment (runner.Job.Environment) runs only once
// BuildEnvironment made it ready; otherwise it fails (infra) without
// running.
func (r *Runner) Run(ctx context.Context, job runner.Job) (runner.Result, error) {
	begin := time.Now()
	res := runner.Result{
		CandidateID: job.CandidateID,
		Trial:       job.Trial,
		Backend:     Backend,
		StartedAt:   begin.UTC(),
	}
	j := &jobRun{r: r, job: job, res: &res}
	err := j.run(ctx)
	j.cleanup()
	end := time.Now()
	res.FinishedAt = end.UTC()
	res.JobSeconds = end.Sub(begin).Seconds()
	return res, err
}

// jobRun is the state of one Run.
type jobRun struct {
	r   *Runner
	job runner.Job
	res *runner.Result

	// dir is where the job's processes run: workdir, or the plain job's
	// own Dir.
	dir string
	// workdir is the fresh working directory Run made (and removes).
	workdir string
	// envDir is the directory of the job's environment, if it has one.
	envDir string
	box    box
}

// phase announces p and returns a func that records its duration.
func (j *jobRun) phase(p runner.Phase) func() {
	j.job.Enter(p)
	start := time.Now()
	return func() { j.res.Phases.Add(p, time.Since(start)) }
}

func (j *jobRun) run(ctx context.Context) error {
	if ctx.Err() != nil {
		j.res.Settle(j.job, runner.Outcome{Cancelled: true})
		return nil
	}
	if e := j.job.Environment; e != nil {
		dir, err := j.r.environmentDir(e)
		if err != nil {
			j.res.Failed(runner.ErrInfra, err.Error())
			return nil
		}
		j.envDir = dir
	}
	if j.job.Dir != "" {
		return j.runPlain(ctx)
	}
	done := j.phase(runner.PhaseUpload)
	outRel, err := runner.RelPath(j.job.EffectiveOutputFile())
	if err != nil {
		done()
		j.res.Failed(runner.ErrInfra, "output file "+err.Error())
		return nil
	}
	outRel = filepath.FromSlash(outRel)
	// forge-<pid>-…: a later forge removes it if this one is killed before
	// it can (removeStale).
	wd, err := os.MkdirTemp(j.r.opts.TempDir, fmt.Sprintf("forge-%d-%s-", os.Getpid(), safeName(j.job.CandidateID)))
	if err != nil {
		done()
		err = fmt.Errorf("make working directory in %s: %w", j.r.opts.TempDir, err)
		j.res.Failed(runner.ErrInfra, err.Error())
		return &runner.UnusableError{Kind: runner.ErrInfra, Err: err}
	}
	j.workdir, j.dir = wd, wd
	if err := os.Mkdir(filepath.Join(wd, "tmp"), 0o700); err != nil {
		done()
		j.res.Failed(runner.ErrInfra, fmt.Sprintf("make %s/tmp: %v", wd, err))
		return nil
	}
	if err := upload(wd, j.job.Files); err != nil {
		done()
		j.res.Failed(runner.ErrInfra, err.Error())
		return nil
	}
	done()

	if err := j.contain(); err != nil {
		return err
	}

	outAbs := filepath.Join(wd, outRel)
	env := j.env(true)
	if len(j.job.Setup) > 0 {
		done := j.phase(runner.PhaseSetup)
		ok := j.setup(ctx, j.env(j.job.SetupSecrets))
		done()
		if !ok {
			return nil
		}
	}

	if ctx.Err() != nil {
		j.res.Settle(j.job, runner.Outcome{Cancelled: true})
		return nil
	}
	if len(j.job.Command) == 0 {
		j.res.Failed(runner.ErrInfra, "the job has no command")
		return nil
	}
	outcome, ok := j.execute(ctx, j.job.Argv(outAbs), env)
	if !ok {
		return nil
	}
	done = j.phase(runner.PhaseDownload)
	j.download(outRel, &outcome)
	done()
	j.res.Settle(j.job, outcome)
	return nil
}

// runPlain runs a plain job (runner.Job.Dir): its Command as it is, in its
// existing directory, with nothing copied in or read back.
func (j *jobRun) runPlain(ctx context.Context) error {
	switch {
	case !filepath.IsAbs(j.job.Dir):
		j.res.Failed(runner.ErrInfra, fmt.Sprintf("the job's directory %q is not absolute", j.job.Dir))
		return nil
	case len(j.job.Files) > 0 || len(j.job.Setup) > 0:
		j.res.Failed(runner.ErrInfra, "a job with its own directory takes no files and no setup")
		return nil
	case len(j.job.Command) == 0:
		j.res.Failed(runner.ErrInfra, "the job has no command")
		return nil
	}
	if fi, err := os.Stat(j.job.Dir); err != nil || !fi.IsDir() {
		j.res.Failed(runner.ErrInfra, fmt.Sprintf("the job's directory %s is not a directory", j.job.Dir))
		return nil
	}
	j.dir = j.job.Dir
	j.job.ArtifactOptional = true // nothing is read back: exit 0 is success
	if err := j.contain(); err != nil {
		return err
	}
	outcome, ok := j.execute(ctx, j.job.Command, j.plainEnv())
	if ok {
		j.res.Settle(j.job, outcome)
	}
	return nil
}

// contain makes the job's box (a PID namespace, a cgroup): this backend's
// "create".
func (j *jobRun) contain() error {
	done := j.phase(runner.PhaseCreate)
	b, err := j.r.platform.newBox(boxSpec{marker: marker(j.job), readOnly: j.readOnly()})
	done()
	if err != nil {
		err = fmt.Errorf("contain job %s: %w", j.job.Name(), err)
		j.res.Failed(runner.ErrInfra, err.Error())
		return &runner.UnusableError{Kind: runner.ErrInfra, Err: err}
	}
	j.box = b
	return nil
}

// execute runs argv, the job's main process, in j.dir and records its
// output and runtime. When it could not be started the Result says why and
// ok is false.
func (j *jobRun) execute(ctx context.Context, argv, env []string) (o runner.Outcome, ok bool) {
	done := j.phase(runner.PhaseExecute)
	defer done()
	path, err := j.r.lookPath(argv[0], envValue(env, "PATH"), j.dir)
	if err != nil {
		j.res.Failed(runner.ErrCandidateFailed, err.Error())
		return o, false
	}
	p, err := j.r.runProcess(ctx, j.box, process{
		path: path, argv: argv, dir: j.dir, env: env,
		timeout:  j.job.EffectiveTimeout(),
		endAll:   true,
		maxBytes: j.job.Limits.OutputCap(),
		echo:     j.job.Echo,
	})
	if err != nil {
		j.res.Failed(startErrorKind(err), err.Error())
		return o, false
	}
	j.res.RuntimeSeconds = p.runtime.Seconds()
	j.res.Output = p.stdout.String()
	j.res.Stderr = p.stderr.String()
	j.res.OutputTruncated = p.stdout.Truncated() || p.stderr.Truncated()
	return runner.Outcome{ExitCode: p.exitCode, TimedOut: p.timedOut, Cancelled: p.cancelled}, true
}

// setup runs the job's setup commands in order and reports whether all of
// them succeeded; when one did not, the Result says why.
func (j *jobRun) setup(ctx context.Context, env []string) bool {
	timeout := cmp.Or(j.job.SetupTimeout, runner.DefaultSetupTimeout)
	i, p, err := j.r.runSteps(ctx, j.box, shellSteps{
		lines: j.job.Setup, dir: j.dir, env: env,
		timeout:  timeout,
		maxBytes: j.job.Limits.OutputCap(),
	})
	switch {
	case i < 0:
		return true
	case err != nil:
		j.res.Failed(startErrorKind(err), fmt.Sprintf("setup %q: %v", j.job.Setup[i], err))
		return false
	}
	j.res.Output, j.res.Stderr = p.stdout.String(), p.stderr.String()
	j.res.OutputTruncated = p.stdout.Truncated() || p.stderr.Truncated()
	if p.cancelled {
		j.res.Settle(j.job, runner.Outcome{Cancelled: true})
	} else {
		j.res.SetupFailed(runner.Outcome{ExitCode: p.exitCode, TimedOut: p.timedOut}, timeout, j.res.Output, j.res.Stderr)
	}
	return false
}

func (j *jobRun) cleanup() {
	if j.workdir == "" && j.box == nil {
		return
	}
	done := j.phase(runner.PhaseCleanup)
	defer done()
	ended := true
	if j.box != nil {
		if err := j.box.close(); err != nil {
			ended = false
			// Whatever Run started must be gone when it returns; when it may
			// not be, the result says so rather than claim success.
			msg := "could not end the job's processes: " + err.Error()
			if j.res.ErrorKind == runner.ErrNone {
				j.res.Failed(runner.ErrInfra, msg)
			} else {
				j.res.ErrorMessage += "; " + msg
			}
		}
	}
	switch {
	case j.workdir == "":
	case ended:
		j.r.removeWorkdir(j.workdir)
	default: // what could not be ended may still write there
		_ = removeAll(j.workdir)
	}
}

// safeName keeps a candidate id usable in a directory name.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

// removeStale removes with remove the forge-<pid>-* entries of dir whose
// forge is gone: it was killed before it could clean up (SIGKILL, a second
// Ctrl-C). Their processes died with it (pidns) or are ended by their
// job's cgroup, but working directories and empty cgroups stay until
// someone removes them (a cgroup that still holds processes cannot be).
func removeStale(dir string, remove func(string) error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() && ownerGone(e.Name()) {
			_ = remove(filepath.Join(dir, e.Name()))
		}
	}
}
