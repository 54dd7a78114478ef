package cli

// How an error ends forge: its exit code, decided here only, and what
// forge tells the user besides for the errors it understands (explain).

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// Exit codes (docs/exit-codes.md).
const (
	ExitOK          = 0
	ExitGateFailed  = 1
	ExitUsage       = 2
	ExitInfra       = 3
	ExitInterrupted = 130
)

// exitError carries an exit code chosen where the error was understood.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode gives err an exit code, unless it has one already: the code
// chosen nearest to where the error was understood wins.
func withCode(code int, err error) error {
	if err == nil || errors.As(err, new(*exitError)) {
		return err
	}
	return &exitError{code: code, err: err}
}

// errSilent carries an exit code whose explanation was already printed.
type errSilent struct{ code int }

// errInterrupted reports a run stopped by a signal; its message was printed.
var errInterrupted = errSilent{code: ExitInterrupted}

func (e errSilent) Error() string { return fmt.Sprintf("exit %d", e.code) }

// flagError is a usage error of the flags: Run adds a pointer to --help.
type flagError struct{ error }

// rule is a check of a command's flags; why is the usage error when broken.
type rule struct {
	broken bool
	why    string
}

// firstBroken is the usage error of the first rule broken, else nil.
func firstBroken(rules []rule) error {
	for _, r := range rules {
		if r.broken {
			return flagError{errors.New(r.why)}
		}
	}
	return nil
}

// exitCode maps an error to forge's exit code; this is the only place that
// does. An error's kind decides before a code given with withCode.
func exitCode(err error) int {
	var ee *exitError
	var silent errSilent
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &silent):
		return silent.code
	case errors.As(err, new(*runner.UnusableError)):
		return ExitInfra
	case errors.As(err, new(*forge.MergeRefusedError)):
		return ExitUsage
	case errors.As(err, &ee):
		return ee.code
	}
	return ExitUsage // cobra's own errors: unknown command or flag, bad value
}

// mergeHints is what forge merge adds to a refusal: the flags to play or
// merge with.
var mergeHints = map[forge.MergeRefusal]string{
	forge.NotAShard:     " (forge run --shard K/N plays a shard)",
	forge.OtherTasks:    "; --tasks, --sample or --seed differ",
	forge.OtherJobs:     "; --trials or --only differ",
	forge.OtherTrials:   "; were they played with another --trials?",
	forge.ShardsMissing: "; merge it too, or --allow-partial",
}

// explain is the one table from the errors of forge run and forge merge
// that forge understands to what it adds to their message: the flag to
// change, or how to go on. rec is the run's record, nil when the run was
// refused (t is nil for forge merge).
func explain(err error, t *tournament, rec *record.Record) error {
	var unknownCandidate *forge.UnknownCandidateError
	var unknownTask *forge.UnknownTaskError
	var build *runner.BuildError
	var merge *forge.MergeRefusedError
	switch {
	case errors.As(err, &merge):
		return fmt.Errorf("%w%s", err, mergeHints[merge.Why])
	case errors.As(err, &unknownCandidate):
		return fmt.Errorf("--only %s: %w", unknownCandidate.ID, err)
	case errors.As(err, &unknownTask):
		return fmt.Errorf("--tasks %s: %w", unknownTask.ID, err)
	case errors.As(err, new(*forge.NoTasksError)):
		return fmt.Errorf("--tasks/--sample: %w", err)
	case errors.As(err, new(*forge.MissingSecretsError)):
		return fmt.Errorf("%w (--allow-missing-secrets leaves out the candidates that need them)", err)
	case errors.As(err, new(*forge.TrialsDifferError)):
		return fmt.Errorf("%w; use the same --trials", err)
	case errors.As(err, new(*forge.ShardDiffersError)):
		return fmt.Errorf("%w; drop --shard: --resume plays the run's own jobs", err)
	case rec == nil:
		return err
	case errors.As(err, &build):
		return fmt.Errorf("%w%s; no trial was played in it and everything started has been cleaned up", err, t.buildLog(build, rec))
	case errors.As(err, new(*forge.FailingInfraError)):
		// Nothing is wrong with the run: it can go on once the
		// infrastructure does.
		return fmt.Errorf("%w; everything started has been cleaned up; once it works again, finish the run with: %s",
			err, t.resumeCommand(rec.Backend))
	case errors.As(err, new(*runner.UnusableError)):
		return fmt.Errorf("%w; everything started has been cleaned up, partial results in %s", err,
			filepath.Join(t.dir(), record.ResultsFile))
	}
	return err
}
