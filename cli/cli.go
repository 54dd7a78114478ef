package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

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

// Version, when set at build time with
// -ldflags "-X github.com/forge-run/forge/cli.Version=v1.2.3", is forge's
// version; otherwise it comes from the build info (see version).
var Version = ""

// version says which forge this is: the module version (a tag, or a
// pseudo-version for `go install …@commit`), else "(devel)", then the VCS
// revision and time the binary was built from when Go recorded them, and
// "+dirty" for a tree with uncommitted changes.
func version(info *debug.BuildInfo, ok bool) string {
	v := Version
	if !ok {
		return cmp.Or(v, "(devel)")
	}
	v = cmp.Or(v, info.Main.Version, "(devel)")
	var rev, at string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if strings.Contains(v, rev) {
		return v // a pseudo-version names the revision already
	}
	if dirty {
		rev += "+dirty"
	}
	if at != "" {
		return fmt.Sprintf("%s (%s, %s)", v, rev, at)
	}
	return fmt.Sprintf("%s (%s)", v, rev)
}

// Env is what a command may use of the process it runs in. Tests fill it in.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// StdoutTTY and StderrTTY say whether those are terminals; StdoutWidth
	// is the terminal's width in columns (0: unknown).
	StdoutTTY, StderrTTY bool
	StdoutWidth          int
	// Signals delivers SIGINT/SIGTERM; nil means none arrive.
	Signals <-chan os.Signal
	// StopSignals restores the default signal behaviour, so a second Ctrl-C
	// ends forge at once.
	StopSignals func()
}

// Main runs forge with the process's arguments and environment and returns
// the exit code.
func Main() int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	env := Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		StdoutTTY: isTerminal(os.Stdout), StderrTTY: isTerminal(os.Stderr), StdoutWidth: termWidth(os.Stdout),
		Signals: sigs, StopSignals: func() { signal.Reset(os.Interrupt, syscall.SIGTERM) },
	}
	return Run(context.Background(), os.Args[1:], env)
}

// exitError carries an exit code chosen where the error was understood.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// errInterrupted reports a run stopped by a signal; its message was printed.
var errInterrupted = errors.New("interrupted")

// errSilent carries an exit code whose explanation was already printed.
type errSilent struct{ code int }

func (e errSilent) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Run executes the command line args and returns the exit code. All output
// goes to env's writers.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Stdout == nil {
		env.Stdout = io.Discard
	}
	if env.Stderr == nil {
		env.Stderr = io.Discard
	}
	root := newRootCmd(&env)
	root.SetArgs(args)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	if env.Stdin != nil {
		root.SetIn(env.Stdin)
	}
	err := root.ExecuteContext(ctx)
	code := exitCode(err)
	var silent errSilent
	if err != nil && !errors.Is(err, errInterrupted) && !errors.As(err, &silent) {
		fmt.Fprintln(env.Stderr, "forge: "+err.Error())
		if code == ExitUsage && isFlagError(err) {
			fmt.Fprintln(env.Stderr, "Run 'forge --help' for usage.")
		}
	}
	return code
}

// exitCode maps an error to forge's exit code; this is the only place that
// does.
func exitCode(err error) int {
	var ee *exitError
	var silent errSilent
	var unusable *runner.UnusableError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &silent):
		return silent.code
	case errors.Is(err, errInterrupted):
		return ExitInterrupted
	case errors.As(err, &unusable):
		return ExitInfra
	case errors.As(err, &ee):
		return ee.code
	}
	return ExitUsage // cobra's own errors: unknown command or flag, bad value
}

type flagError struct{ error }

func isFlagError(err error) bool {
	var fe flagError
	return errors.As(err, &fe)
}

func newRootCmd(env *Env) *cobra.Command {
	root := &cobra.Command{
		Use:   "forge",
		Short: "Run a tournament between candidate programs and pick the best",
		Long: `forge runs every candidate of a manifest (forge.yaml) in its own sandbox, in
parallel (a Daytona cloud sandbox with --daytona, a local process otherwise),
scores the results, ranks the candidates and reports the standings.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version(debug.ReadBuildInfo()),
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError{err} })
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(newRunCmd(env), newMergeCmd(env), newValidateCmd(env), newCompareCmd(env), newHistoryCmd(env),
		newGCCmd(env), newDoctorCmd(env), newViewCmd(env), newVersionCmd(env))
	return root
}

func newVersionCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print forge's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(env.Stdout, "forge "+version(debug.ReadBuildInfo()))
			return nil
		},
	}
}
