package daytona

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/options"
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
)

// defaultHome is where Daytona's images keep the sandbox user's home. It is
// used for one thing only: the mount point of a volume whose mount is
// relative, which must be absolute before the sandbox exists; every other
// path comes from asking the sandbox.
const defaultHome = "/home/daytona"

// sdkHTTPTimeout is the SDK's own HTTP timeout, kept for toolbox calls.
const sdkHTTPTimeout = 60 * time.Second

// errDead is the cause that stops every job once the run cannot go on: the
// API refused the key, or answered a creation with an error no retry can
// fix.
var errDead = errors.New("the Daytona backend cannot be used for this run")

// Runner runs jobs in Daytona sandboxes. It is safe for concurrent use.
type Runner struct {
	opts      Options
	client    *daytona.Client
	pacer     *pacer
	ledger    *ledger
	volumeID  string
	mountPath string
	// toolboxHTTP carries every toolbox call. The SDK's own client uses
	// http.DefaultTransport, which keeps only 2 idle connections per host:
	// with many sandboxes behind one toolbox proxy, most calls would dial
	// (and, against the real service, handshake TLS) again.
	toolboxHTTP *http.Client

	// dead is cancelled (cause errDead) when the API refuses the key: every
	// job in flight stops and cleans up.
	dead context.Context
	kill context.CancelCauseFunc

	// streams is what the run learned about command log streams.
	streams streamState
	// capacity holds jobs back while the account's limits are reached.
	capacity *capacity

	mu      sync.Mutex
	authErr error
	// fatal, once set, stops the run: a creation failed in a way no retry
	// fixes (unknown snapshot, invalid resources, a sandbox that cannot
	// start, an account full without this run).
	fatal     *runner.UnusableError
	live      map[string]*daytona.Sandbox // by name: created, not yet deleted
	pending   map[string]bool             // names that may exist without a handle
	undeleted map[string]string           // name -> "name (id)": could not be deleted
	closed    bool
}

// New checks the options, connects the SDK and, when a volume is
// configured, finds or creates it (waiting until it is ready). It makes no
// other call to the service.
func New(ctx context.Context, opts Options) (*Runner, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.RunID == "" {
		return nil, errors.New("daytona: Options.RunID is required")
	}
	client, err := daytona.NewClientWithConfig(&types.DaytonaConfig{
		APIKey: opts.APIKey, APIUrl: opts.APIURL, Target: opts.Target,
	})
	if err != nil {
		return nil, fmt.Errorf("daytona: set up the SDK client: %w", described(err))
	}
	lg, err := openLedger(opts.LedgerPath)
	if err != nil {
		return nil, err
	}
	r := &Runner{
		opts: opts, client: client, pacer: newPacer(opts.CreateRate), ledger: lg, capacity: newCapacity(),
		live: map[string]*daytona.Sandbox{}, pending: map[string]bool{}, undeleted: map[string]string{},
	}
	r.toolboxHTTP = opts.ToolboxHTTPClient
	if r.toolboxHTTP == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 256
		r.toolboxHTTP = &http.Client{Transport: tr, Timeout: sdkHTTPTimeout}
	}
	r.dead, r.kill = context.WithCancelCause(context.Background())
	host, _ := os.Hostname()
	if err := lg.append(LedgerEntry{Event: eventOpen, RunID: opts.RunID, PID: os.Getpid(), Host: host}); err != nil {
		lg.close()
		return nil, err
	}
	if opts.Image == "" && (opts.CPU > 0 || opts.MemoryGB > 0 || opts.DiskGB > 0) {
		fmt.Fprintln(opts.Warn, "daytona: resources (cpu, memory, disk) apply only with an image; sandboxes from a snapshot get the snapshot's resources")
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

// ensureVolume finds or creates the configured volume and waits until it is
// ready.
func (r *Runner) ensureVolume(ctx context.Context) error {
	name := r.opts.Volume.Name
	var vol *types.Volume
	err := r.retry(ctx, "find volume "+name, func(ctx context.Context) error {
		v, err := r.client.Volume.Get(ctx, name)
		if classify(ctx, err).class == classNotFound {
			v, err = r.client.Volume.Create(ctx, name)
			if statusOf(err) == 400 { // created meanwhile by another run
				v, err = r.client.Volume.Get(ctx, name)
			}
		}
		vol = v
		return err
	})
	if err != nil {
		return r.unusableOr(ctx, fmt.Errorf("daytona: volume %s: %w", name, described(err)), err)
	}
	deadline := time.Now().Add(r.opts.CreateTimeout)
	interval := 100 * time.Millisecond
	for vol.State != "ready" {
		if vol.State == "error" {
			reason := "volume creation failed"
			if vol.ErrorReason != nil {
				reason = *vol.ErrorReason
			}
			return fmt.Errorf("daytona: volume %s: %s", name, reason)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("daytona: volume %s is still %s after %s", name, vol.State, r.opts.CreateTimeout)
		}
		if err := sleep(ctx, interval); err != nil {
			return err
		}
		interval = min(2*interval, r.opts.PollInterval)
		err := r.retry(ctx, "get volume "+name, func(ctx context.Context) error {
			v, err := r.client.Volume.Get(ctx, name)
			if err == nil {
				vol = v
			}
			return err
		})
		if err != nil {
			return r.unusableOr(ctx, fmt.Errorf("daytona: volume %s: %w", name, described(err)), err)
		}
	}
	r.volumeID = vol.ID
	r.mountPath = r.opts.Volume.Mount
	if !strings.HasPrefix(r.mountPath, "/") {
		r.mountPath = path.Join(defaultHome, r.mountPath)
	}
	return nil
}

// unusableOr turns an auth failure into an UnusableError; other errors are
// returned as msg.
func (r *Runner) unusableOr(ctx context.Context, msg, err error) error {
	if classify(ctx, err).class == classAuth {
		r.markDead(err)
		return r.unusable()
	}
	return msg
}

// markDead records that the API refused the key and stops every job.
func (r *Runner) markDead(err error) {
	r.mu.Lock()
	if r.authErr == nil {
		r.authErr = err
	}
	r.mu.Unlock()
	r.kill(errDead)
}

// stop records a run-level failure that no retry fixes and stops every
// job; the first one wins. It returns the run-stopping error.
func (r *Runner) stop(err error) error {
	r.mu.Lock()
	if r.fatal == nil && r.authErr == nil {
		r.fatal = &runner.UnusableError{Kind: runner.ErrInfra, Err: err}
	}
	r.mu.Unlock()
	r.kill(errDead)
	return r.unusable()
}

// unusable is the run-stopping error once the key was refused or the run
// was stopped, else nil.
func (r *Runner) unusable() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.authErr != nil:
		return &runner.UnusableError{Kind: runner.ErrAuth, Err: fmt.Errorf(
			"Daytona refused the API key: %s; check DAYTONA_API_KEY", describe(r.authErr))}
	case r.fatal != nil:
		return r.fatal
	}
	return nil
}

// retry runs op under the backend's retry policy with the budget of an
// ordinary call (see Options.retry).
func (r *Runner) retry(ctx context.Context, what string, op func(context.Context) error) error {
	return r.opts.retry(ctx, what, r.opts.calls(), op)
}

// adopt makes sb usable by forge: its toolbox calls go through the
// configured HTTP client.
func (r *Runner) adopt(sb *daytona.Sandbox) *daytona.Sandbox {
	if sb != nil && r.toolboxHTTP != nil {
		sb.ToolboxClient.GetConfig().HTTPClient = r.toolboxHTTP
	}
	return sb
}

// unusableKind is the error kind of the run-stopping error (auth when
// there is none yet: only a refused key stops jobs without one).
func unusableKind(err error) runner.ErrorKind {
	var ue *runner.UnusableError
	if errors.As(err, &ue) {
		return ue.Kind
	}
	return runner.ErrAuth
}

func (r *Runner) track(name string, sb *daytona.Sandbox) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live[name] = sb
	delete(r.pending, name)
	r.capacity.created(name)
}

func (r *Runner) setPending(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.live[name]; !ok {
		r.pending[name] = true
	}
}

// notCreated records that no attempt can have created name.
func (r *Runner) notCreated(name string) {
	r.mu.Lock()
	_, live := r.live[name]
	wasPending := r.pending[name]
	delete(r.pending, name)
	r.mu.Unlock()
	if !live {
		r.capacity.release(name)
	}
	if wasPending && !live {
		r.ledger.append(LedgerEntry{Event: eventNotCreated, RunID: r.opts.RunID, Name: name})
	}
}

// neverSent reports a network error that happened before the request
// reached the service (nothing can have been created).
func neverSent(err error) bool {
	if statusOf(err) != 0 {
		return false
	}
	m := messageOf(err)
	return strings.Contains(m, "dial tcp") || strings.Contains(m, "connection refused") || strings.Contains(m, "no such host")
}

func (r *Runner) forget(name string) {
	r.mu.Lock()
	delete(r.live, name)
	delete(r.pending, name)
	delete(r.undeleted, name)
	r.mu.Unlock()
	r.capacity.release(name)
}

// failedToStart recognises a created sandbox that ended in error or
// build_failed: the SDK's own error when its wait for "started" sees that
// state, or the API's 400 "Sandbox failed to start: <reason>" when the
// sandbox failed while the API waited for it. reason is for a person.
func failedToStart(f failure, err error) (reason string, ok bool) {
	msg := messageOf(err)
	if !strings.HasPrefix(msg, errFailedToStart) || (f.class != classTransient && statusOf(err) != 400) {
		return "", false
	}
	reason = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(msg, errFailedToStart), ":"))
	if reason == "" {
		reason = "it ended in error or build_failed"
	}
	first, _, _ := strings.Cut(reason, "\n")
	return first, true
}

// errFailedToStart is what the SDK says when a sandbox ends in error or
// build_failed; it does not say which sandbox.
const errFailedToStart = "Sandbox failed to start"

// createSandbox creates the sandbox called name, going through the
// capacity gate and the creation pacer, under the retry policy, and
// reconciles ambiguous outcomes by looking the name up. A non-nil sandbox
// is returned whenever one exists, even with an error: the caller must
// delete it.
func (r *Runner) createSandbox(ctx context.Context, name string, params any) (*daytona.Sandbox, error) {
	// ambiguous: an attempt may have created it although it failed.
	ambiguous := false
	defer func() {
		if !ambiguous {
			r.notCreated(name)
		}
	}()
	var sb *daytona.Sandbox
	err := r.opts.retry(ctx, "create "+name, r.opts.calls(), func(ctx context.Context) error {
		var err error
		sb, err = r.createOnce(ctx, name, params, &ambiguous)
		return err
	})
	return sb, err
}

// createOnce is one attempt of createSandbox. Its errors are for the retry
// policy: permanent ones stop, retryNow tries again at once (it waited for
// capacity), again counts as a transient failure.
func (r *Runner) createOnce(ctx context.Context, name string, params any, ambiguous *bool) (*daytona.Sandbox, error) {
	if err := r.unusable(); err != nil {
		return nil, backoff.Permanent(err)
	}
	if err := r.capacity.acquire(ctx, name); err != nil {
		return nil, backoff.Permanent(err)
	}
	if err := r.pacer.wait(ctx); err != nil {
		return nil, backoff.Permanent(err)
	}
	if err := r.ledger.append(LedgerEntry{Event: eventCreate, RunID: r.opts.RunID, Name: name}); err != nil {
		return nil, backoff.Permanent(err)
	}
	r.setPending(name)
	sb, err := r.client.Create(ctx, params, options.WithTimeout(r.opts.CreateTimeout))
	if err == nil {
		r.pacer.succeeded()
		*ambiguous = true // it exists: never "not created"
		return r.adopt(sb), nil
	}
	f := classify(ctx, err)
	if (f.class == classTransient || f.class == classCancelled) && !neverSent(err) {
		*ambiguous = true
	}
	if reason, ok := failedToStart(f, err); ok {
		// It exists, in error or build_failed; find it so it is deleted.
		// The next would fail the same way: the image or snapshot cannot
		// start.
		*ambiguous = true
		found, _ := r.lookup(ctx, name)
		return found, backoff.Permanent(r.stop(fmt.Errorf(
			"Daytona could not start sandbox %s (%s): %s; check daytona.image or daytona.snapshot",
			name, reason, r.startsFrom())))
	}
	switch f.class {
	case classAuth:
		r.markDead(err)
		return nil, backoff.Permanent(r.unusable())
	case classRateLimited:
		r.pacer.throttled(f.retryAfter)
		return nil, err
	case classQuota:
		if err := r.waitForCapacity(ctx, name, err); err != nil {
			return nil, backoff.Permanent(err)
		}
		return nil, &retryNow{err}
	case classPermanent, classNotFound:
		return nil, backoff.Permanent(r.stop(fmt.Errorf(
			"Daytona refused to create a sandbox: %w; no retry can fix this: check the manifest's daytona: block (%s)",
			described(err), r.startsFrom())))
	case classConflict:
		found, lerr := r.lookup(ctx, name)
		switch {
		case lerr != nil:
		case found != nil && *ambiguous:
			// Our own earlier attempt created it after all.
			sb, err := r.started(ctx, found)
			return sb, backoff.Permanent(err)
		case found != nil:
			// Left over by an earlier process of the same run (a crash, a
			// resume): it is ours by name; replace it.
			fmt.Fprintf(r.opts.Warn, "daytona: sandbox %s already exists from an earlier attempt; deleting it first\n", name)
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.DeleteTimeout)
			derr := r.deleteSandbox(dctx, name, found)
			cancel()
			if derr != nil {
				return nil, backoff.Permanent(derr)
			}
		}
		return nil, &again{err}
	case classTransient:
		// Unless the request never left, the service may have created it
		// before failing to answer.
		if *ambiguous {
			if found, lerr := r.lookup(ctx, name); lerr == nil && found != nil {
				sb, err := r.started(ctx, found)
				return sb, backoff.Permanent(err)
			}
		}
		return nil, err
	}
	return nil, backoff.Permanent(err)
}

// waitForCapacity handles a creation of name refused for the account's
// limits. While none of this run's sandboxes exists but some are being
// created, their outcome decides: it waits for it. With some alive, the
// run's concurrency comes down to their number (said once) and the caller
// tries again, waiting in acquire until one of them is deleted. With none
// alive or coming, the account is full without this run: it returns the
// run-stopping error. A refusal just after one of this run's deletions may
// be the service catching up with it: then it waits until the deletion is
// twice as old (at most until it is lagGrace old), or for the next change,
// and lets the caller try again. While some of this run's deleted
// sandboxes are still being destroyed, the account is not called full: the
// caller tries again every destroyingPoll.
func (r *Runner) waitForCapacity(ctx context.Context, name string, refusal error) error {
	what, _ := quotaRefusal(statusOf(refusal), messageOf(refusal))
	r.capacity.refused(name)
	for {
		alive, pending, changed, since := r.capacity.state(time.Now())
		recent := since >= 0 && since < lagGrace
		var lag <-chan time.Time
		switch {
		case alive == 0 && pending > 0:
			// Wait for the creations under way.
		case alive == 0 && !recent && r.stillDestroying(ctx) > 0:
			// Deleted but not gone: the account may free their share only
			// once they are. Look again in a while, or at the next change.
			t := time.NewTimer(destroyingPoll)
			defer t.Stop()
			lag = t.C
		case alive == 0 && !recent:
			return r.stop(fmt.Errorf("Daytona account limit reached (%s) with none of this run's sandboxes alive: other sandboxes of the account use it all; "+
				"free some (forge gc deletes those forge left behind; the others are in the Daytona dashboard), lower concurrency or ask for smaller daytona.resources",
				what))
		case !recent:
			// The account admits what it holds of this run: the sandboxes
			// alive and those deleted but still being destroyed.
			if n := r.capacity.lower(alive + r.stillDestroying(ctx)); n > 0 {
				fmt.Fprintf(r.opts.Warn, "forge: account limit reached (%s): running %d at a time\n", what, n)
			}
			return nil
		default:
			// Try again as the deletion ages (after as long again as it is
			// old, from 100 ms), or at the next change.
			t := time.NewTimer(min(lagGrace-since, max(lagFirstRetry, since)))
			defer t.Stop()
			lag = t.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
			if lag != nil {
				return nil
			}
		case <-lag:
			return nil
		}
	}
}

// startsFrom says what the sandboxes start from, for messages.
func (r *Runner) startsFrom() string {
	switch {
	case r.opts.Image != "":
		s := "image " + r.opts.Image
		if r.opts.CPU > 0 || r.opts.MemoryGB > 0 || r.opts.DiskGB > 0 {
			s += fmt.Sprintf(", cpu %d, memory %d GB, disk %d GB", r.opts.CPU, r.opts.MemoryGB, r.opts.DiskGB)
		}
		return s
	case r.opts.Snapshot != "":
		return "snapshot " + r.opts.Snapshot
	}
	return "the default snapshot"
}

// started waits for an adopted sandbox to be started.
func (r *Runner) started(ctx context.Context, sb *daytona.Sandbox) (*daytona.Sandbox, error) {
	r.adopt(sb)
	if sb.State == "started" {
		return sb, nil
	}
	if err := sb.WaitForStart(ctx, r.opts.CreateTimeout); err != nil {
		return sb, err
	}
	return sb, nil
}

// lookup finds a sandbox by name; nil, nil when there is none.
func (r *Runner) lookup(ctx context.Context, name string) (*daytona.Sandbox, error) {
	var sb *daytona.Sandbox
	err := r.retry(ctx, "look up "+name, func(ctx context.Context) error {
		s, err := r.client.Get(ctx, name)
		if classify(ctx, err).class == classNotFound {
			return nil
		}
		sb = s
		return err
	})
	if err != nil {
		return nil, err
	}
	return r.adopt(sb), nil
}

// deleteSandbox deletes sb under the retry policy's deletion budget (5xx,
// 429 and "state change in progress" retried until ctx ends). A sandbox
// that is already gone counts as deleted. One that cannot be deleted is
// recorded and named on Warn.
func (r *Runner) deleteSandbox(ctx context.Context, name string, sb *daytona.Sandbox) error {
	err := r.opts.retry(ctx, "delete "+name, r.opts.deletions(), func(ctx context.Context) error {
		err := sb.DeleteWithTimeout(ctx, 0)
		if classify(ctx, err).class == classNotFound {
			return nil
		}
		return err
	})
	if err == nil {
		r.forget(name)
		return r.ledger.append(LedgerEntry{Event: eventDeleted, RunID: r.opts.RunID, Name: name, ID: sb.ID})
	}
	return r.undeletable(name, sb.ID, err)
}

// undeletable records a sandbox forge could not delete.
func (r *Runner) undeletable(name, id string, err error) error {
	label := name
	if id != "" {
		label = name + " (" + id + ")"
	}
	r.mu.Lock()
	r.undeleted[name] = label
	delete(r.pending, name)
	delete(r.live, name)
	r.mu.Unlock()
	r.capacity.release(name) // it may still hold quota, but it is out of forge's hands
	fmt.Fprintf(r.opts.Warn, "daytona: could not delete sandbox %s: %s; it stops and deletes itself after its auto-stop, or run \"forge gc\"\n",
		label, describe(err))
	lerr := r.ledger.append(LedgerEntry{Event: eventUndeletable, RunID: r.opts.RunID, Name: name, ID: id, Error: describe(err)})
	return errors.Join(fmt.Errorf("delete sandbox %s: %w", label, described(err)), lerr)
}

// reconcile deletes the sandbox called name if it exists: a creation whose
// outcome forge never learned.
func (r *Runner) reconcile(ctx context.Context, name string) error {
	sb, err := r.lookup(ctx, name)
	if err != nil {
		return r.undeletable(name, "", fmt.Errorf("look it up: %w", err))
	}
	if sb == nil {
		r.forget(name)
		return r.ledger.append(LedgerEntry{Event: eventDeleted, RunID: r.opts.RunID, Name: name})
	}
	return r.deleteSandbox(ctx, name, sb)
}

// Undeleted names the sandboxes this Runner could not delete ("name (id)"),
// sorted; a sandbox deleted later (by Close) is no longer named.
func (r *Runner) Undeleted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.undeleted))
	for _, l := range r.undeleted {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// Close deletes whatever this Runner created and still exists (Run deletes
// its sandbox itself; this catches what an interrupted Run could not), then
// sweeps the service for sandboxes labelled with this run, and closes the
// ledger. Call it after every Run has returned. ctx bounds the whole
// clean-up; it should not be the run's cancelled context.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	live := make(map[string]*daytona.Sandbox, len(r.live))
	for n, sb := range r.live {
		live[n] = sb
	}
	var pending []string
	for n := range r.pending {
		pending = append(pending, n)
	}
	r.mu.Unlock()
	sort.Strings(pending)

	var errs []error
	for name, sb := range live {
		errs = append(errs, r.deleteSandbox(ctx, name, sb))
	}
	for _, name := range pending {
		errs = append(errs, r.reconcile(ctx, name))
	}
	r.mu.Lock()
	keyRefused := r.authErr != nil
	r.mu.Unlock()
	if !keyRefused {
		errs = append(errs, r.sweep(ctx))
	}
	errs = append(errs, r.ledger.append(LedgerEntry{Event: eventClose, RunID: r.opts.RunID}), r.ledger.close())
	r.kill(context.Canceled)
	return errors.Join(errs...)
}

// listRun lists every sandbox labelled with this run.
func (r *Runner) listRun(ctx context.Context) ([]*daytona.Sandbox, error) {
	labels := map[string]string{LabelApp: LabelAppValue, LabelRun: r.opts.RunID}
	var found []*daytona.Sandbox
	limit := 100
	for page := 1; ; page++ {
		var res *daytona.PaginatedSandboxes
		p := page
		err := r.retry(ctx, "list this run's sandboxes", func(ctx context.Context) error {
			var err error
			res, err = r.client.List(ctx, labels, &p, &limit)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("list sandboxes of run %s: %w", r.opts.RunID, described(err))
		}
		found = append(found, res.Items...)
		if page >= res.TotalPages {
			return found, nil
		}
	}
}

// stillDestroying counts this run's deleted sandboxes the service has not
// finished destroying: until they are gone they may hold their share of the
// account's limits. A failed listing counts none.
func (r *Runner) stillDestroying(ctx context.Context) int {
	found, err := r.listRun(ctx)
	if err != nil {
		return 0
	}
	n := 0
	for _, sb := range found {
		if sb.State == "destroying" {
			n++
		}
	}
	return n
}

// sweep deletes every sandbox still labelled with this run.
func (r *Runner) sweep(ctx context.Context) error {
	found, err := r.listRun(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, sb := range found {
		if sb.State == "destroying" || sb.State == "destroyed" {
			continue
		}
		fmt.Fprintf(r.opts.Warn, "daytona: sandbox %s (%s) of this run was still alive at the end; deleting it\n", sb.Name, sb.ID)
		errs = append(errs, r.deleteSandbox(ctx, sb.Name, r.adopt(sb)))
	}
	return errors.Join(errs...)
}
