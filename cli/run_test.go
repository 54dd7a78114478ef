package cli

import (
	"context"
	"io"
	"testing"

	"github.com/spf13/cobra"
)

// execute runs a command built with a run function of the test's, as
// forge would with these arguments.
func execute(cmd *cobra.Command, args ...string) error {
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceUsage = true
	return cmd.Execute()
}

// The flags reach the run function as options that know which were given,
// a zero value included.
func TestRunFlagsReachTheRunFunction(t *testing.T) {
	var got *runOptions
	cmd := newRunCmd(&Env{}, func(_ context.Context, o *runOptions) error { got = o; return nil })
	if err := execute(cmd, "--sample", "3", "--seed", "0", "--fail-under", "0", "--retries", "0", "--report", "r.md"); err != nil {
		t.Fatal(err)
	}
	if !got.seedSet || !got.failUnderSet || got.maxDropSet || !got.retries.set || got.over.Sample != 3 || got.reports[0] != "r.md" {
		t.Errorf("options: %+v", got)
	}
}

// Flags that do not go together are refused before the run function.
func TestFlagsAreValidatedBeforeTheRunFunction(t *testing.T) {
	ran := false
	for _, c := range []struct {
		cmd  *cobra.Command
		args []string
		want string
	}{
		{newRunCmd(&Env{}, func(context.Context, *runOptions) error { ran = true; return nil }),
			[]string{"--seed", "0"}, "--seed needs --sample"},
		{newRunCmd(&Env{}, func(context.Context, *runOptions) error { ran = true; return nil }),
			[]string{"--shard", "1/2", "--fail-under", "0"}, "--fail-under: a shard gives no verdict; give it to forge merge"},
		{newMergeCmd(&Env{}, func(*mergeOptions) error { ran = true; return nil }),
			[]string{"s1", "--max-drop", "0"}, "--max-drop needs --baseline"},
		{newCompareCmd(&Env{}, func(*compareOptions) error { ran = true; return nil }),
			[]string{"a", "b", "--max-drop", "2"}, "--max-drop 2: must be between 0 and 1 (a score difference)"},
		{newGCCmd(&Env{}, func(context.Context, *gcOptions) error { ran = true; return nil }),
			[]string{"--local", "--daytona"}, "--local and --daytona: give one, or neither for both"},
	} {
		err := execute(c.cmd, c.args...)
		if err == nil || err.Error() != c.want || exitCode(err) != ExitUsage {
			t.Errorf("%s %q: %v (exit %d), want %q (exit 2)", c.cmd.Name(), c.args, err, exitCode(err), c.want)
		}
	}
	if ran {
		t.Error("a run function ran with flags that do not go together")
	}
}
