package daytona

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/forge-run/forge/runner"
)

var _ runner.Runner = (*Runner)(nil)

// Backend is the Result.Backend of jobs run here.
const Backend = "daytona"

// Labels forge puts on every sandbox it creates.
const (
	LabelApp       = "app"
	LabelAppValue  = "forge"
	LabelRun       = "forge-run"
	LabelCandidate = "forge-candidate"
	LabelTrial     = "forge-trial"
	LabelTask      = "forge-task"
)

// defaultHome is the sandbox user's home in Daytona's images, used only to
// make a relative volume mount absolute before the sandbox exists.
const defaultHome = "/home/daytona"

// sdkHTTPTimeout is the SDK's own HTTP timeout, kept for toolbox calls.
const sdkHTTPTimeout = 60 * time.Second

// errDead is the cause that stops every job once the run cannot go on.
var errDead = errors.New("the Daytona backend cannot be used for this run")

// Runner runs jobs in Daytona sandboxes. It is safe for concurrent use.
type Runner struct {
	opts      Options
	client    *daytona.Client
	pacer     *pacer
	ledger    *ledger
	capacity  *capacity // holds jobs back while the account's limits are reached
	volumeID  string
	mountPath string

	// dead is cancelled (cause errDead) once the run is stopped: every job
	// in flight stops and cleans up.
	dead          context.Context
	kill          context.CancelCauseFunc
	streamRefused sync.Once // warns once that log streams cannot be opened

	mu sync.Mutex
	// stopped is why the run cannot go on: the key refused, or a creation
	// failed in a way no retry fixes.
	stopped   *runner.UnusableError
	undeleted map[string]string // name -> "name (id)": could not be deleted
	// abandoned names creations that were not found once given up: the
	// service may make them still, and the closing sweep deletes them.
	abandoned map[string]bool
	closed    bool
	envs      map[string]error // by hash, once made: nil (ready) or its *runner.BuildError
	turns     runner.Turns     // who makes each environment ready
}

// New checks the options, connects the SDK and finds or creates the
// volume, if any, waiting until it is ready: no other call to the service.
func New(ctx context.Context, opts Options) (*Runner, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.RunID == "" {
		return nil, errors.New("daytona: Options.RunID is required")
	}
	client, err := newClient(opts)
	if err != nil {
		return nil, err
	}
	lg, err := openLedger(opts.LedgerPath)
	if err != nil {
		return nil, err
	}
	if opts.ToolboxHTTPClient == nil {
		// The SDK's keeps 2 idle connections per host, and many sandboxes
		// share one toolbox proxy.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 256
		opts.ToolboxHTTPClient = &http.Client{Transport: tr, Timeout: sdkHTTPTimeout}
	}
	r := &Runner{
		opts: opts, client: client, pacer: newPacer(opts.CreateRate), ledger: lg, capacity: newCapacity(),
		undeleted: map[string]string{}, abandoned: map[string]bool{}, envs: map[string]error{},
	}
	r.dead, r.kill = context.WithCancelCause(context.Background())
	host, _ := os.Hostname()
	if err := lg.append(LedgerEntry{Event: eventOpen, RunID: opts.RunID, PID: os.Getpid(), Host: host}); err != nil {
		lg.close()
		return nil, err
	}
	if opts.Image == "" && (opts.CPU > 0 || opts.MemoryGB > 0 || opts.DiskGB > 0) {
		fmt.Fprintln(opts.Warn, "daytona: resources (cpu, memory, disk) apply only with an image, and to the snapshots forge builds for environments; sandboxes from a configured snapshot get that snapshot's resources")
	}
	if opts.Volume != nil {
		if err := r.ensureVolume(ctx); err != nil {
			lg.append(LedgerEntry{Event: eventClose, RunID: opts.RunID})
			lg.close()
			return nil, err
		}
	}
	return r, nil
}

func (r *Runner) ensureVolume(ctx context.Context) error {
	name := r.opts.Volume.Name
	vol, err := retried(ctx, &r.opts, "find volume "+name, r.opts.calls(), func(ctx context.Context) (*types.Volume, error) {
		v, err := r.client.Volume.Get(ctx, name)
		if classify(ctx, err).class == classNotFound {
			v, err = r.client.Volume.Create(ctx, name)
			if statusOf(err) == 400 { // created meanwhile by another run
				v, err = r.client.Volume.Get(ctx, name)
			}
		}
		return v, err
	})
	if err != nil {
		return r.callError(ctx, "daytona: volume "+name, err)
	}
	deadline := time.Now().Add(r.opts.CreateTimeout)
	for interval := 100 * time.Millisecond; vol.State != "ready"; interval = min(2*interval, r.opts.PollInterval) {
		if vol.State == "error" {
			return fmt.Errorf("daytona: volume %s: %s", name, ptrOr(vol.ErrorReason, "volume creation failed"))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("daytona: volume %s is still %s after %s", name, vol.State, r.opts.CreateTimeout)
		}
		if err := sleep(ctx, interval); err != nil {
			return err
		}
		if vol, err = retried(ctx, &r.opts, "get volume "+name, r.opts.calls(), func(ctx context.Context) (*types.Volume, error) {
			return r.client.Volume.Get(ctx, name)
		}); err != nil {
			return r.callError(ctx, "daytona: volume "+name, err)
		}
	}
	r.volumeID, r.mountPath = vol.ID, r.opts.Volume.Mount
	if !strings.HasPrefix(r.mountPath, "/") {
		r.mountPath = path.Join(defaultHome, r.mountPath)
	}
	return nil
}

// callError is what a failed call means: a refused key stops the run, a
// cancelled call or a stopped run is returned as it is, anything else says
// what failed.
func (r *Runner) callError(ctx context.Context, what string, err error) error {
	var ue *runner.UnusableError
	switch f := classify(ctx, err); {
	case errors.As(err, &ue), f.class == classCancelled:
		return err
	case f.class == classAuth:
		return r.stop(runner.ErrAuth, errKeyRefused(err))
	}
	return fmt.Errorf("%s: %w", what, described(err))
}

func errKeyRefused(err error) error {
	return fmt.Errorf("Daytona refused the API key: %w; check DAYTONA_API_KEY", described(err))
}

// stop stops the run and every job for err, a refused key (ErrAuth) or a
// failure no retry fixes (ErrInfra), and returns the run-stopping error:
// the first reason, but a refused key over any other.
func (r *Runner) stop(kind runner.ErrorKind, err error) error {
	r.mu.Lock()
	if r.stopped == nil || kind == runner.ErrAuth && r.stopped.Kind != runner.ErrAuth {
		r.stopped = &runner.UnusableError{Kind: kind, Err: err}
	}
	r.mu.Unlock()
	r.kill(errDead)
	return r.unusable()
}

// unusable is the run-stopping error once the run was stopped, else nil.
func (r *Runner) unusable() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped == nil {
		return nil
	}
	return r.stopped
}

// Undeleted names, sorted, the sandboxes this Runner could not delete
// ("name (id)") and has not deleted since.
func (r *Runner) Undeleted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Values(r.undeleted))
}

// Close deletes what this Runner created and still exists, sweeps the
// service for sandboxes labelled with this run and closes the ledger; after
// every Run, with a context that is not cancelled.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	live, pending := r.capacity.snapshot()

	var errs []error
	for name, sb := range live {
		errs = append(errs, r.deleteSandbox(ctx, name, sb))
	}
	for _, name := range pending {
		errs = append(errs, r.reconcile(ctx, name))
	}
	r.mu.Lock()
	keyRefused := r.stopped != nil && r.stopped.Kind == runner.ErrAuth
	r.mu.Unlock()
	if !keyRefused {
		errs = append(errs, r.sweep(ctx))
	}
	errs = append(errs, r.ledger.append(LedgerEntry{Event: eventClose, RunID: r.opts.RunID}), r.ledger.close())
	r.kill(context.Canceled)
	return errors.Join(errs...)
}

// Run runs one job in a fresh sandbox and deletes it, whatever happens. A
// failing candidate is data; the error is a *runner.UnusableError or nil.
func (r *Runner) Run(ctx context.Context, job runner.Job) (runner.Result, error) {
	start := time.Now()
	res := runner.Result{CandidateID: job.CandidateID, Trial: job.Trial, Backend: Backend, StartedAt: start.UTC()}
	if job.Dir != "" { // a directory of this machine, not a sandbox's
		res.Failed(runner.ErrInfra, "the Daytona backend runs no job in a directory of its own (Job.Dir); run it locally")
		res.FinishedAt = time.Now().UTC()
		return res, nil
	}
	j := &jobRun{r: r, job: job, res: &res, name: sandboxName(r.opts.RunID, job.CandidateID, job.TaskID, job.Trial)}
	err := j.run(ctx)
	res.FinishedAt = time.Now().UTC()
	res.JobSeconds = time.Since(start).Seconds()
	return res, err
}
