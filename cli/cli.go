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
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/internal/yamlcheck"
)

// Version, when set with -ldflags "-X github.com/forge-run/forge/cli.Version=v1.2.3",
// is forge's version; otherwise it comes from the build info.
var Version = ""

// version says which forge this is: the module version, else "(devel)",
// then the VCS revision ("+dirty") and time when Go recorded them.
func version(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return cmp.Or(Version, "(devel)")
	}
	v := cmp.Or(Version, info.Main.Version, "(devel)")
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
		Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		StdoutTTY: isTerminal(os.Stdout), StderrTTY: isTerminal(os.Stderr), StdoutWidth: termWidth(os.Stdout),
		Signals: sigs, StopSignals: func() { signal.Reset(os.Interrupt, syscall.SIGTERM) },
	}
	return Run(context.Background(), os.Args[1:], env)
}

// Run executes the command line args and returns the exit code. All output
// goes to env's writers.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	env.Stdout, env.Stderr = cmp.Or(env.Stdout, io.Discard), cmp.Or(env.Stderr, io.Discard)
	root := newRootCmd(&env)
	root.SetArgs(args)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	code := exitCode(err)
	if err != nil && !errors.As(err, new(errSilent)) {
		fmt.Fprintln(env.Stderr, "forge: "+text.Inert(err.Error())) // it may quote a candidate or a task
		if code == ExitUsage && errors.As(err, new(flagError)) {
			fmt.Fprintf(env.Stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
	}
	return code
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
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return flagError{nearFlag(cmd, err)} })
	root.CompletionOptions.DisableDefaultCmd = true
	// Each command hands its options to its run function; a test may hand
	// them to its own.
	root.AddCommand(newRunCmd(env, runTournament), newMergeCmd(env, runMerge), newValidateCmd(env, runValidate),
		newCompareCmd(env, runCompare), newHistoryCmd(env, runHistory), newGCCmd(env, runGC),
		newDoctorCmd(env, runDoctor), newViewCmd(env, runView), newReportCmd(env, runReport), newVersionCmd(env))
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

// nearFlag adds to an unknown flag's error the flag of cmd it was likely
// meant to be: two edits away, or the one that starts with it.
func nearFlag(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names, starting []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		names = append(names, f.Name)
		if strings.HasPrefix(f.Name, name) {
			starting = append(starting, f.Name)
		}
	})
	near := yamlcheck.Nearest(name, names)
	if near == "" && len(starting) == 1 {
		near = starting[0]
	}
	if near == "" {
		return err
	}
	return fmt.Errorf("%w (did you mean --%s?)", err, near)
}

// manifestArg lets a command take its manifest as its one argument, as
// well as with -f.
func manifestArg(path *string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return nil
		case len(args) > 1:
			return flagError{fmt.Errorf("%s takes one manifest, got %d arguments: %s", cmd.CommandPath(), len(args), strings.Join(args, " "))}
		case cmd.Flags().Changed("file"):
			return flagError{fmt.Errorf("the manifest given twice: %s and -f %s", args[0], *path)}
		}
		*path = args[0]
		return nil
	}
}

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// termWidth is the width of the terminal f is, else COLUMNS when set (a
// pipe or a log that knows its width), else 0.
func termWidth(f *os.File) int {
	if w, _, err := term.GetSize(int(f.Fd())); err == nil {
		return w
	}
	w, _ := strconv.Atoi(os.Getenv("COLUMNS"))
	return max(w, 0)
}
