package runner

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// fakeJob records the steps a Pipeline ran and fails the one named.
type fakeJob struct {
	ran     []Phase
	failAt  Phase
	err     error
	cancel  func() // called in the failing step instead, when set
	cleaned error
}

// fakeStep is the step of phase p.
func fakeStep(p Phase) func(*fakeJob, context.Context) error {
	return func(f *fakeJob, _ context.Context) error {
		f.ran = append(f.ran, p)
		if p != f.failAt {
			return nil
		}
		if f.cancel != nil {
			f.cancel()
		}
		return f.err
	}
}

func fakePipeline() *Pipeline[*fakeJob] {
	p := &Pipeline[*fakeJob]{Cleanup: func(f *fakeJob, _ context.Context) error {
		f.ran = append(f.ran, PhaseCleanup)
		return f.cleaned
	}}
	for _, ph := range []Phase{PhaseCreate, PhaseUpload, PhaseSetup, PhaseExecute, PhaseDownload, PhaseVerify} {
		p.Steps = append(p.Steps, PipelineStep[*fakeJob]{Phase: ph, Do: fakeStep(ph)})
	}
	return p
}

func TestPipelineRunsStepsAndMapsErrors(t *testing.T) {
	unusable := &UnusableError{Kind: ErrInfra, Err: errors.New("no machine")}
	for _, tc := range []struct {
		name     string
		job      Job
		f        fakeJob
		ran      []Phase
		kind     ErrorKind
		msg      string
		stopsRun bool
		lasting  bool
	}{
		{name: "all", job: Job{Setup: []string{"true"}, Verify: &Verify{}},
			ran: []Phase{PhaseCreate, PhaseUpload, PhaseSetup, PhaseExecute, PhaseDownload, PhaseVerify, PhaseCleanup}},
		{name: "no setup, no verifier",
			ran: []Phase{PhaseCreate, PhaseUpload, PhaseExecute, PhaseDownload, PhaseCleanup}},
		{name: "plain error is infra", f: fakeJob{failAt: PhaseUpload, err: errors.New("disk full")},
			ran: []Phase{PhaseCreate, PhaseUpload, PhaseCleanup}, kind: ErrInfra, msg: "disk full"},
		{name: "kinded", f: fakeJob{failAt: PhaseExecute, err: &StepError{Kind: ErrCandidateFailed, Err: errors.New("no such program")}},
			ran: []Phase{PhaseCreate, PhaseUpload, PhaseExecute, PhaseCleanup}, kind: ErrCandidateFailed, msg: "no such program"},
		{name: "lasting", f: fakeJob{failAt: PhaseUpload, err: &StepError{Err: errors.New("permission denied"), Lasting: true}},
			ran: []Phase{PhaseCreate, PhaseUpload, PhaseCleanup}, kind: ErrInfra, msg: "permission denied", lasting: true},
		{name: "stops the run", f: fakeJob{failAt: PhaseCreate, err: StopRun(errors.New("no box"))},
			ran: []Phase{PhaseCreate, PhaseCleanup}, kind: ErrInfra, msg: "no box", stopsRun: true},
		{name: "unusable", f: fakeJob{failAt: PhaseCreate, err: unusable},
			ran: []Phase{PhaseCreate, PhaseCleanup}, kind: ErrInfra, msg: unusable.Error(), stopsRun: true},
		{name: "ended", job: Job{Setup: []string{"false"}}, f: fakeJob{failAt: PhaseSetup, err: ErrEnded},
			ran: []Phase{PhaseCreate, PhaseUpload, PhaseSetup, PhaseCleanup}},
		{name: "cleanup failed", f: fakeJob{cleaned: errors.New("processes left")},
			ran: []Phase{PhaseCreate, PhaseUpload, PhaseExecute, PhaseDownload, PhaseCleanup}, kind: ErrInfra, msg: "processes left"},
		{name: "cleanup failed after a failure", f: fakeJob{failAt: PhaseUpload, err: errors.New("disk full"), cleaned: errors.New("processes left")},
			ran: []Phase{PhaseCreate, PhaseUpload, PhaseCleanup}, kind: ErrInfra, msg: "disk full; processes left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			var entered []Phase
			tc.job.Progress = func(p Phase) { entered = append(entered, p) }
			var res Result
			err := fakePipeline().Run(context.Background(), &f, &tc.job, &res)
			if !slices.Equal(f.ran, tc.ran) || !slices.Equal(entered, tc.ran) {
				t.Errorf("ran %v, entered %v; want %v", f.ran, entered, tc.ran)
			}
			if res.ErrorKind != tc.kind || res.ErrorMessage != tc.msg || res.Lasting != tc.lasting {
				t.Errorf("result %s %q lasting %v, want %s %q lasting %v", res.ErrorKind, res.ErrorMessage, res.Lasting, tc.kind, tc.msg, tc.lasting)
			}
			var ue *UnusableError
			if errors.As(err, &ue) != tc.stopsRun {
				t.Errorf("Run returned %v; stops the run: %v", err, tc.stopsRun)
			}
		})
	}
}

func TestPipelineStopsAtCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := fakeJob{failAt: PhaseUpload, err: errors.New("upload cut short"), cancel: cancel}
	var res Result
	if err := fakePipeline().Run(ctx, &f, &Job{}, &res); err != nil {
		t.Fatal(err)
	}
	if want := []Phase{PhaseCreate, PhaseUpload, PhaseCleanup}; !slices.Equal(f.ran, want) {
		t.Errorf("ran %v, want %v", f.ran, want)
	}
	if res.ErrorKind != ErrCancelled {
		t.Errorf("result %s %q, want cancelled", res.ErrorKind, res.ErrorMessage)
	}

	// Cancelled before it started: nothing runs, nothing to clean up.
	f = fakeJob{}
	res = Result{}
	if err := fakePipeline().Run(ctx, &f, &Job{}, &res); err != nil || len(f.ran) != 0 || res.ErrorKind != ErrCancelled {
		t.Errorf("ran %v, result %s, error %v", f.ran, res.ErrorKind, err)
	}
}

func TestPipelineReadsBackAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := fakeJob{failAt: PhaseExecute, cancel: cancel} // cancelled during execute, which returns nil
	var res Result
	if err := fakePipeline().Run(ctx, &f, &Job{Verify: &Verify{}}, &res); err != nil {
		t.Fatal(err)
	}
	// Download reads back what the execution left; verify does not start.
	if want := []Phase{PhaseCreate, PhaseUpload, PhaseExecute, PhaseDownload, PhaseCleanup}; !slices.Equal(f.ran, want) {
		t.Errorf("ran %v, want %v", f.ran, want)
	}
	if res.ErrorKind != ErrCancelled {
		t.Errorf("result %s %q, want cancelled", res.ErrorKind, res.ErrorMessage)
	}
}

func TestPipelineStopped(t *testing.T) {
	stopped := &UnusableError{Kind: ErrAuth, Err: errors.New("key refused")}
	f := fakeJob{failAt: PhaseUpload, err: errors.New("upload refused")}
	p := fakePipeline()
	p.Stopped = func(*fakeJob) error { return stopped }
	var res Result
	err := p.Run(context.Background(), &f, &Job{}, &res)
	if err != stopped || res.ErrorKind != ErrAuth || res.ErrorMessage != "stopped: "+stopped.Error() {
		t.Errorf("Run: %v; result %s %q", err, res.ErrorKind, res.ErrorMessage)
	}
}
