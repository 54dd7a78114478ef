package runner

// One job's way through a backend: its steps in order, each announced and
// timed as its phase, none started once the job is cancelled, a failure
// mapped to the Result once, and the cleanup after whatever happened.

import (
	"cmp"
	"context"
	"errors"
	"time"
)

// PipelineStep is one step of a job in a backend; j is the backend's state
// of the job. A method expression fits:
// PipelineStep[*jobRun]{PhaseCreate, (*jobRun).create}.
type PipelineStep[J any] struct {
	Phase Phase
	Do    func(j J, ctx context.Context) error
}

// Pipeline is a backend's steps for a job, in the order it takes them, and
// its cleanup.
type Pipeline[J any] struct {
	// Steps run in order until one fails. The PhaseSetup step runs only
	// when the job has setup commands; the PhaseVerify step only when it
	// has a verifier and VerifiesAfter how it ended.
	Steps []PipelineStep[J]
	// Cleanup undoes what the steps made, once any step was entered,
	// whatever happened since: it must not give up on a cancelled ctx. Its
	// error says something of the job may be left, and the Result says so.
	Cleanup func(j J, ctx context.Context) error
	// Stopped, when set, is the backend's run-stopping error once the
	// backend was stopped, else nil: a step failing then fails the job as
	// stopped, whatever the step's own error.
	Stopped func(j J) error
}

// ErrEnded is a step's error saying the Result already says how the job
// ended (its setup failed): no further step runs and nothing more is
// recorded.
var ErrEnded = errors.New("the job ended")

// StepError is a step's error that fails the job with Kind (ErrInfra when
// empty) and Err's message, and with Stop set also stops the run; Lasting
// goes to the Result's.
type StepError struct {
	Kind    ErrorKind
	Err     error
	Stop    *UnusableError
	Lasting bool
}

func (e *StepError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *StepError) Unwrap() error { return e.Err }

// StopRun fails the job as infra with err's message and stops the run: the
// backend cannot run jobs at all.
func StopRun(err error) error {
	return &StepError{Kind: ErrInfra, Err: err, Stop: &UnusableError{Kind: ErrInfra, Err: err}}
}

// Run drives a job through p, j being the backend's state of it and job and
// res its Job and Result. A step is announced (Job.Enter) and its time added
// to res.Phases, failed or not; once ctx is done no further step starts
// but download: what an execution left is read back, a cancelled one's too.
// It returns a *UnusableError when the backend cannot run jobs, else nil: how
// the job ended is in res.
func (p *Pipeline[J]) Run(ctx context.Context, j J, job *Job, res *Result) error {
	var err error
	entered := false
	for _, s := range p.Steps {
		switch {
		case s.Phase == PhaseSetup && len(job.Setup) == 0,
			s.Phase == PhaseVerify && (job.Verify == nil || !VerifiesAfter(res.ErrorKind)):
			continue
		}
		if s.Phase != PhaseDownload && ctx.Err() != nil {
			err = ctx.Err()
			break
		}
		entered = true
		job.Enter(s.Phase)
		t := time.Now()
		err = s.Do(j, ctx)
		res.Phases.Add(s.Phase, time.Since(t))
		if err != nil {
			break
		}
	}
	stop := p.fail(ctx, j, job, res, err)
	if entered && p.Cleanup != nil {
		job.Enter(PhaseCleanup)
		t := time.Now()
		err := p.Cleanup(j, ctx)
		res.Phases.Add(PhaseCleanup, time.Since(t))
		// Whatever a job made must be gone when it ends; when it may not
		// be, the Result says so rather than claim success.
		switch {
		case err == nil:
		case res.ErrorKind == ErrNone:
			res.Failed(ErrInfra, err.Error())
		default:
			res.ErrorMessage += "; " + err.Error()
		}
	}
	return stop
}

// fail records in res how the step error err ended the job, and returns
// the run-stopping error, if any.
func (p *Pipeline[J]) fail(ctx context.Context, j J, job *Job, res *Result, err error) error {
	if err == nil || errors.Is(err, ErrEnded) {
		return nil
	}
	var ue *UnusableError
	if p.Stopped != nil {
		if stop := p.Stopped(j); stop != nil {
			kind := ErrInfra
			if errors.As(stop, &ue) {
				kind = ue.Kind
			}
			res.Failed(kind, "stopped: "+stop.Error())
			return stop
		}
	}
	var se *StepError
	switch {
	case ctx.Err() != nil:
		res.Settle(*job, Outcome{Cancelled: true})
	case errors.As(err, &se):
		res.Failed(cmp.Or(se.Kind, ErrInfra), se.Err.Error())
		res.Lasting = se.Lasting
		if se.Stop != nil {
			return se.Stop
		}
	case errors.As(err, &ue):
		res.Failed(ue.Kind, ue.Error())
		return ue
	default:
		res.Failed(ErrInfra, err.Error())
	}
	return nil
}
