package forge

// Playing a trial again when the infrastructure failed it, and stopping
// the run when the infrastructure keeps failing.

import (
	"context"
	"fmt"
	"time"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// attempts plays job again in a fresh sandbox while an attempt ends infra
// (which says nothing of the candidate) and retries are left; never once
// the run is stopping, nor when a fresh sandbox would fail the same way
// (Result.Lasting). When as many trials in a row as run at once (at least
// two, at most the run's jobs) spent all their attempts, the
// infrastructure is failing: the run stops (*runner.UnusableError) rather
// than spend every other trial's attempts.
func (s *state) attempts(ctx context.Context, job runner.Job, start time.Time) (record.Trial, error) {
	retries := s.o.Plan.RetriesOf(job.CandidateID)
	var failed []record.AttemptError
	for attempt := 1; ; attempt++ {
		out, err := s.o.Runner.Run(ctx, job)
		res := record.Trial{Result: out}
		res.CandidateID, res.TaskID, res.Trial = job.CandidateID, job.TaskID, job.Trial
		maskResult(s.mask, &res)
		if res.Backend == "" {
			res.Backend = s.o.Backend
		}
		res.Attempts, res.AttemptErrors = attempt, failed
		if res.ErrorKind.Scored() {
			s.spent.Store(0)
		}
		if err != nil || res.ErrorKind != runner.ErrInfra || res.Lasting || ctx.Err() != nil {
			return res, err // a lasting fault is the image's: not the infrastructure failing
		}
		if attempt > retries {
			if n := int(s.spent.Add(1)); attempt > 1 && n >= max(2, min(s.o.Plan.Concurrency, len(s.done))) {
				err = &runner.UnusableError{Kind: runner.ErrInfra, Err: &FailingInfraError{Trials: n, Trial: job.Name(), Attempts: attempt, Last: res.ErrorMessage}}
			}
			return res, err
		}
		failed = append(failed, record.AttemptError{Kind: res.ErrorKind, Message: res.ErrorMessage, SandboxID: res.SandboxID})
		s.o.emit(Event{Kind: EventRetry, Job: job.Name(), Elapsed: time.Since(start),
			Result: &res, Attempt: attempt + 1, Attempts: retries + 1})
	}
}

// FailingInfraError stops a run whose trials the infrastructure failed on
// every attempt, Trials of them in a row (state.attempts).
type FailingInfraError struct {
	Trials   int
	Trial    string // the last of them
	Attempts int
	Last     string // the last attempt's error message
}

func (e *FailingInfraError) Error() string {
	return fmt.Sprintf("%d trials in a row failed all their attempts (the last: %s, %d attempts): %s",
		e.Trials, e.Trial, e.Attempts, text.OneLine(e.Last))
}
