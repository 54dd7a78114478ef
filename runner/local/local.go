package local

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/forge-run/forge/runner"
)

// Defaults of Options.
const (
	DefaultKillGrace = 2 * time.Second
	// DefaultMaxProcs caps one job's tasks where a pids cgroup is available.
	DefaultMaxProcs = 1024
	// defaultPath is the candidate's PATH when forge has none.
	defaultPath = "/usr/local/bin:/usr/bin:/bin"
)

// Backend is the Result.Backend of every job run here.
const Backend = "local"

// Options configure a Runner.
type Options struct {
	// TempDir holds the working directories; empty means os.TempDir().
	TempDir string
	// KillGrace is the time between SIGTERM and SIGKILL, and for reading a
	// finished process's pipes still held; zero means DefaultKillGrace.
	KillGrace time.Duration
	// Getenv reads forge's own environment; nil means os.Getenv.
	Getenv func(string) string
	// Containment names a tier, New failing without it; empty means the
	// strongest this machine allows.
	Containment Containment
	// MaxProcs caps one job's tasks; zero means DefaultMaxProcs.
	MaxProcs int
	// EnvCache is where environments are built; empty means DefaultEnvCache().
	EnvCache string
	// User is who jobs run as: UserUnprivileged (the default) or UserRoot.
	User string
	// Hide are directories jobs (but those in a directory of their own)
	// must neither read nor learn the place of: the manifest directory, the
	// output root. Where forge can mount (ReadOnlyEnvironments), they see
	// neither, and in /proc only their own processes (hide.go).
	Hide []string
}

// Who jobs run as (Options.User).
const (
	// UserUnprivileged: when forge is root, each job's processes (setup,
	// candidate, verifier) run as a uid of their own, and environments are
	// built as another (Linux); when forge is not root, as forge's user.
	UserUnprivileged = ""
	// UserRoot: as forge's own user, root when forge is root.
	UserRoot = "root"
)

// Validate reports options that cannot work.
func (o Options) Validate() error {
	var errs []error
	if o.KillGrace < 0 {
		errs = append(errs, fmt.Errorf("kill grace %s is negative", o.KillGrace))
	}
	if o.MaxProcs < 0 {
		errs = append(errs, fmt.Errorf("max procs %d is negative", o.MaxProcs))
	}
	if o.User != UserUnprivileged && o.User != UserRoot {
		errs = append(errs, fmt.Errorf("unknown user %q (want root, or none for an unprivileged user per job)", o.User))
	}
	if !o.Containment.valid() {
		errs = append(errs, fmt.Errorf("unknown containment %q (want pidns, cgroup, pgroup or process)", o.Containment))
	}
	return errors.Join(errs...)
}

// Runner runs jobs as contained local processes. It is safe for concurrent use.
type Runner struct {
	opts     Options
	platform *platform
	// users hands each job a uid of its own; nil: jobs run as forge's user.
	users *users
	// path is the jobs' PATH: forge's, less what their users cannot reach.
	path string
	// etcDir, root's alone, holds the jobs' /etc/passwd and /etc/group
	// (etcFiles) while they run; made in etcParent on first use, removed
	// by Close.
	etcMu     sync.Mutex
	etcParent string
	etcDir    string
	systemEtc systemEtc
	// found caches lookPath's answers: every job names the same python3.
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
	// onEnvWait, for tests, is called when BuildEnvironment waits its turn.
	onEnvWait func()
	// steps, when StepsFileEnv is set, logs where each job's time goes.
	steps *stepLog
	// spares are emptied working directories kept for later jobs, each with
	// its tmp/, owned by forge and as a new one is (fresh: a new one's shape
	// and its tmp/'s, once seen), in TempDir under the name of the job that
	// had it (forge-<pid>-…: removeStale takes them if forge is killed).
	spares kept[workdirID]
	fresh  atomic.Pointer[[2]dirShape]
	// slots are mount namespaces kept for later jobs (nsslot.go).
	slots kept[*nsSlot]
	// hiding keeps Options.Hide from the jobs, nil when nothing is hidden;
	// jobsDir holds their working directories: TempDir, or a directory of
	// its own in it when hiding (bound back under a cover).
	hiding  *hiding
	jobsDir string
}

// backgroundRemovers is how many working directories may be removed at once
// after their Run returned; beyond that, Run removes its own.
const backgroundRemovers = 2

var _ runner.Runner = (*Runner)(nil)

// New checks opts and TempDir and picks the containment this machine allows.
func New(opts Options) (*Runner, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("local runner options: %w", err)
	}
	opts.TempDir = cmp.Or(opts.TempDir, os.TempDir())
	opts.KillGrace = cmp.Or(opts.KillGrace, DefaultKillGrace)
	opts.MaxProcs = cmp.Or(opts.MaxProcs, DefaultMaxProcs)
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
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
	r := &Runner{opts: opts, platform: p, removers: make(chan struct{}, backgroundRemovers), envs: map[string]*envState{}, steps: newStepLog(opts.Getenv)}
	r.slots.max, r.spares.max = maxNsSlots, maxSpares
	r.path = cmp.Or(opts.Getenv("PATH"), defaultPath)
	if r.users, err = newUsers(opts.User); err != nil {
		return nil, fmt.Errorf("local runner: %w", err)
	}
	if r.users != nil {
		// Every job user reaches what any does: none owns anything outside
		// its working directory.
		j := r.users.builder()
		if err := searchable(opts.TempDir, j); err != nil {
			return nil, fmt.Errorf("local runner: jobs run as unprivileged users (forge is root) and cannot reach the temp dir %s: %v; set TMPDIR to one they can (such as /tmp), or run them as root with local: {user: root}", opts.TempDir, err)
		}
		r.path = reachablePath(r.path, j)
		if r.etcParent = etcParent(opts.TempDir); r.etcParent != opts.TempDir {
			removeStale(r.etcParent, removeAll)
		}
	}
	if err := r.hideFromJobs(); err != nil {
		return nil, fmt.Errorf("local runner: %w", err)
	}
	return r, nil
}

// Close waits for the working directories of returned jobs to be removed
// (and removes those kept for later jobs) and lets go of the environments
// BuildEnvironment held. The Runner stays usable;
// a job in an environment needs BuildEnvironment again.
func (r *Runner) Close() error {
	r.closing.Lock()
	defer r.closing.Unlock()
	r.releaseEnvironments()
	_ = r.platform.closeCgroups() // as removeStale would, at the next forge
	r.waitRemovers()
	r.removeSpares()
	r.dropSlots()
	r.platform.closeThreads()
	if r.jobsDir != r.opts.TempDir {
		_ = os.RemoveAll(r.jobsDir) // its jobs' directories went with them
	}
	r.etcMu.Lock()
	if r.etcDir != "" && os.Remove(r.etcDir) == nil { // empty: no job has files there
		r.etcDir = ""
	}
	r.etcMu.Unlock()
	return nil
}

// waitRemovers returns once the removals under way are done.
func (r *Runner) waitRemovers() {
	for range cap(r.removers) { // each returns once its removal is done
		r.removers <- struct{}{}
	}
	for range cap(r.removers) {
		<-r.removers
	}
}

// removeWorkdir removes a finished job's working directory w (or keeps it
// emptied for a later job: spare.go) and its verifier's directory, then
// calls done, in the background when a remover is free: on a slow file
// system the next job need not wait.
func (r *Runner) removeWorkdir(w workdirID, verifyDir string, steps *jobSteps, done func()) {
	remove := func(st jobStep) {
		t := steps.now()
		if w.path != "" {
			r.recycleWorkdir(w)
		}
		if verifyDir != "" {
			_ = removeAll(verifyDir)
		}
		steps.add(st, t)
		done()
	}
	select {
	case r.removers <- struct{}{}:
		steps.later()
		go func() {
			defer func() { <-r.removers }()
			remove(stepRemoveBG)
			r.steps.finished(steps, 0)
		}()
	default:
		remove(stepRemove)
	}
}

// jobEtc writes the /etc/passwd and /etc/group of a job whose user is u,
// at home in home (systemEtc.etcFiles), in etcDir, made when missing:
// forge-<pid>-…, so that a later forge removes it if this one is killed
// first. Under etcMu, which Close holds to remove the directory once
// empty: a job's files are in it before Close can find it so.
func (r *Runner) jobEtc(u *jobUser, home string) ([]etcFile, error) {
	r.etcMu.Lock()
	defer r.etcMu.Unlock()
	if r.etcDir == "" {
		dir, err := os.MkdirTemp(r.etcParent, fmt.Sprintf("forge-%d-etc-", os.Getpid()))
		if err != nil && r.etcParent != r.opts.TempDir {
			dir, err = os.MkdirTemp(r.opts.TempDir, fmt.Sprintf("forge-%d-etc-", os.Getpid()))
		}
		if err != nil {
			return nil, fmt.Errorf("make a directory for the jobs' /etc/passwd: %w", err)
		}
		r.etcDir = dir
	}
	return r.systemEtc.etcFiles(u, home, r.etcDir)
}

// Containment is the tier the runner's jobs get.
func (r *Runner) Containment() Containment { return r.platform.tier }

// PidsLimit is the cap on one job's tasks, or 0 when none is enforced.
func (r *Runner) PidsLimit() int { return r.platform.pidsLimit() }

// ReadOnlyEnvironments reports whether jobs see the environment cache read-only.
func (r *Runner) ReadOnlyEnvironments() bool { return r.platform.readOnly() }

// Describe says how jobs are contained here and why not stronger.
func (r *Runner) Describe() string { return r.platform.describe() }

// JobUser says who jobs run as.
func (r *Runner) JobUser() string {
	switch {
	case r.users != nil:
		return r.users.describe()
	case os.Geteuid() == 0 && r.opts.User == UserRoot:
		return "jobs run as root (local: {user: root}): a candidate can read and change anything on this machine"
	case os.Geteuid() == 0:
		return "jobs run as root: only on Linux does forge give each job a user of its own"
	}
	return fmt.Sprintf("jobs run as forge's user (uid %d)", os.Geteuid())
}

// Which is the program a job that names file runs, found on the jobs' PATH
// as their users may.
func (r *Runner) Which(file string) (string, error) {
	return r.lookPath(file, r.path, "/", r.builder())
}

// AsRoot reports whether jobs run as root.
func (r *Runner) AsRoot() bool { return r.users == nil && os.Geteuid() == 0 }

// removeStale removes the forge-<pid>-* entries of dir whose forge was killed
// before it could clean up; a cgroup still holding processes cannot be removed.
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
