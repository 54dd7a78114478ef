package daytona

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"

	"github.com/forge-run/forge/runner"
)

// Run runs one job in a fresh sandbox and deletes the sandbox, whatever
// happens. A failing candidate is data (nil error); the error is non-nil
// only when the backend is unusable (*runner.UnusableError): the API refused
// the key, or could not be reached at all.
func (r *Runner) Run(ctx context.Context, job runner.Job) (runner.Result, error) {
	start := time.Now()
	res := runner.Result{CandidateID: job.CandidateID, Trial: job.Trial, Backend: Backend, StartedAt: start.UTC()}
	if job.Dir != "" {
		// A plain job runs in a directory of this machine: not a sandbox's.
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

// jobRun is one job on its way through its sandbox.
type jobRun struct {
	r    *Runner
	job  runner.Job
	res  *runner.Result
	name string

	sb      *daytona.Sandbox
	lay     layout
	session bool
	// streams are the goroutines following command log streams; the job
	// waits for them before it returns.
	streams sync.WaitGroup
}

// stepError is an infra failure of the job that also stops the whole run
// (unusable). Any other error of a step that is not an UnusableError is an
// infra failure of the job alone.
type stepError struct {
	msg      string
	unusable error
}

func (e *stepError) Error() string { return e.msg }

func (j *jobRun) run(parent context.Context) error {
	if err := j.r.unusable(); err != nil {
		j.res.Failed(runner.ErrAuth, err.Error())
		return err
	}
	j.r.mu.Lock()
	closed := j.r.closed
	j.r.mu.Unlock()
	if closed {
		j.res.Failed(runner.ErrInfra, "the Daytona runner is closed")
		return nil
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stop := context.AfterFunc(j.r.dead, func() { cancel(context.Cause(j.r.dead)) })
	defer stop()
	defer func() {
		j.cleanup(parent)
		// The deletion ended every log stream still open.
		j.streams.Wait()
	}()

	err := j.steps(ctx)
	if err == nil {
		return nil
	}
	// The run is stopped (the dead context's cause is errDead only once
	// unusable says why), the job cancelled, or the job failed.
	var se *stepError
	var ue *runner.UnusableError
	switch uerr := j.r.unusable(); {
	case uerr != nil:
		errors.As(uerr, &ue)
		j.res.Failed(ue.Kind, "stopped: "+uerr.Error())
		return uerr
	case parent.Err() != nil:
		j.res.Settle(j.job, runner.Outcome{Cancelled: true})
	case errors.As(err, &se):
		j.res.Failed(runner.ErrInfra, se.msg)
		return se.unusable
	case errors.As(err, &ue):
		j.res.Failed(ue.Kind, ue.Error())
		return ue
	default:
		j.res.Failed(runner.ErrInfra, err.Error())
	}
	return nil
}

// step runs one phase, timing it.
func (j *jobRun) step(p runner.Phase, f func() error) error {
	j.job.Enter(p)
	t := time.Now()
	err := f()
	j.res.Phases.Add(p, time.Since(t))
	return err
}

func (j *jobRun) steps(ctx context.Context) error {
	if err := j.step(runner.PhaseCreate, func() error { return j.create(ctx) }); err != nil {
		return err
	}
	if err := j.step(runner.PhaseUpload, func() error { return j.upload(ctx) }); err != nil {
		return err
	}
	if len(j.job.Setup) > 0 {
		var failed bool
		if err := j.step(runner.PhaseSetup, func() (err error) { failed, err = j.setup(ctx); return err }); err != nil || failed {
			return err
		}
	}
	var run sessionRun
	err := j.step(runner.PhaseExecute, func() error {
		if err := j.uploadSecrets(ctx); err != nil {
			return err
		}
		var err error
		run, err = j.runInSession(ctx, "sh "+shQuote(j.lay.controlScript())+" run", j.job.EffectiveTimeout())
		return err
	})
	if err != nil {
		return err
	}
	return j.step(runner.PhaseDownload, func() error { return j.download(ctx, run) })
}

// create makes the job's sandbox.
func (j *jobRun) create(ctx context.Context) error {
	o := j.r.opts
	labels := make(map[string]string, len(o.Labels)+4)
	maps.Copy(labels, o.Labels)
	labels[LabelApp] = LabelAppValue
	labels[LabelRun] = o.RunID
	labels[LabelCandidate] = j.job.CandidateID
	labels[LabelTrial] = strconv.Itoa(j.job.Trial)
	if j.job.TaskID != "" {
		labels[LabelTask] = j.job.TaskID
	}
	env := make(map[string]string, len(o.Env))
	maps.Copy(env, o.Env)
	autoStop := o.AutoStopMinutes
	if autoStop == 0 {
		setup := time.Duration(0)
		if len(j.job.Setup) > 0 {
			setup = j.setupTimeout()
		}
		autoStop = int(math.Ceil((setup + j.job.EffectiveTimeout() + AutoStopMargin).Minutes()))
	}
	autoDelete := 0
	base := types.SandboxBaseParams{
		Name: j.name, Labels: labels, EnvVars: env, NetworkBlockAll: o.NetworkBlockAll,
		AutoStopInterval: &autoStop, AutoDeleteInterval: &autoDelete,
	}
	if len(o.NetworkAllowList) > 0 {
		list := strings.Join(o.NetworkAllowList, ",")
		base.NetworkAllowList = &list
	}
	if j.r.volumeID != "" {
		base.Volumes = []types.VolumeMount{{VolumeID: j.r.volumeID, MountPath: j.r.mountPath}}
	}
	// Params go by value: the SDK silently ignores a pointer.
	var params any = types.SnapshotParams{SandboxBaseParams: base, Snapshot: o.Snapshot}
	if e := j.job.Environment; e != nil {
		// The environment's snapshot, whatever the runner's own snapshot
		// or image; its resources are the snapshot's.
		snap, err := j.r.environmentSnapshot(e)
		if err != nil {
			return err
		}
		params = types.SnapshotParams{SandboxBaseParams: base, Snapshot: snap}
	} else if o.Image != "" {
		p := types.ImageParams{SandboxBaseParams: base, Image: o.Image}
		if o.CPU > 0 || o.MemoryGB > 0 || o.DiskGB > 0 {
			p.Resources = &types.Resources{CPU: o.CPU, Memory: o.MemoryGB, Disk: o.DiskGB}
		}
		params = p
	}
	sb, err := j.r.createSandbox(ctx, j.name, params)
	if sb != nil {
		j.sb = sb
		j.res.SandboxID = sb.ID
		j.res.Resources = j.r.resources()
		j.r.capacity.created(j.name, sb)
		if lerr := j.r.ledger.append(LedgerEntry{Event: eventCreated, RunID: o.RunID, Name: j.name, ID: sb.ID}); lerr != nil && err == nil {
			err = lerr
		}
	}
	if err != nil {
		return j.classified("create sandbox "+j.name, ctx, err)
	}
	return nil
}

// classified turns an SDK error into the job's failure.
func (j *jobRun) classified(what string, ctx context.Context, err error) error {
	var ue *runner.UnusableError
	if errors.As(err, &ue) {
		return err
	}
	f := classify(ctx, err)
	switch f.class {
	case classCancelled:
		return err
	case classAuth:
		return j.r.keyRefused(err)
	}
	msg := fmt.Sprintf("%s: %s", what, describe(err))
	if f.class == classTransient && statusOf(err) == 0 && j.sb == nil {
		// No answer from the API at all, retries spent: unreachable.
		return &stepError{msg: msg, unusable: &runner.UnusableError{Kind: runner.ErrInfra,
			Err: fmt.Errorf("cannot reach the Daytona API at %s: %w", j.r.opts.APIURL, described(err))}}
	}
	return errors.New(msg)
}

func (j *jobRun) setupTimeout() time.Duration {
	if j.job.SetupTimeout > 0 {
		return j.job.SetupTimeout
	}
	return j.r.opts.SetupTimeout
}

// cleanup deletes the sandbox on a fresh context with its own deadline,
// whatever happened to the job; a creation whose outcome is unknown is
// reconciled by name.
func (j *jobRun) cleanup(ctx context.Context) {
	j.job.Enter(runner.PhaseCleanup)
	t := time.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.r.opts.DeleteTimeout)
	defer cancel()
	if j.sb != nil {
		j.r.deleteSandbox(ctx, j.name, j.sb)
	} else if j.r.capacity.mayExist(j.name) {
		j.r.reconcile(ctx, j.name)
	}
	j.res.Phases.Add(runner.PhaseCleanup, time.Since(t))
}
