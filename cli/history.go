package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/internal/text"
)

// historyOptions are `forge history`'s flags.
type historyOptions struct {
	env    *Env
	out    string
	last   int
	format string
}

// Validate checks the flags before the output root is read.
func (o *historyOptions) Validate() error {
	return firstBroken([]rule{
		{o.last < 0, fmt.Sprintf("--last %d: must be 0 (all) or more", o.last)},
		{!slices.Contains([]string{"text", "json"}, strings.ToLower(o.format)), fmt.Sprintf("--format %q: want text or json", o.format)},
	})
}

func newHistoryCmd(env *Env, runF func(*historyOptions) error) *cobra.Command {
	o := &historyOptions{env: env}
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List past runs, newest first, with their winner and scores",
		Long: `List the runs under --out, newest first: when each started (UTC), its id,
backend (×N when it had several trials), winner and every candidate's mean
score. A directory that holds no readable results.json is skipped with a
note on stderr.`,
		Example: `  forge history --last 7
  forge history --format json | jq -r '.[0].run_id'`,
		Args:    cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error { return o.Validate() },
		RunE:    func(*cobra.Command, []string) error { return runF(o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "artifacts", "output root the runs were written under")
	f.IntVarP(&o.last, "last", "n", 20, "show at most this many runs (0: all)")
	f.StringVar(&o.format, "format", "text", "stdout format: text (one line per run) or json")
	return cmd
}

func runHistory(o *historyOptions) error {
	entries, err := compare.History(o.out, o.last)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("--out: %w", err))
	}
	runs := make([]compare.Entry, 0, len(entries))
	for _, e := range entries {
		if e.Skipped != "" {
			fmt.Fprintf(o.env.Stderr, "forge: history: skipped %s: %s\n", text.Inert(e.Dir), text.Inert(e.Skipped))
			continue
		}
		runs = append(runs, e)
	}
	switch {
	case strings.ToLower(o.format) == "json":
		enc := json.NewEncoder(o.env.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(runs)
	case len(runs) == 0:
		fmt.Fprintf(o.env.Stderr, "forge: no runs in %s\n", o.out)
	default:
		err = compare.WriteHistory(o.env.Stdout, runs)
	}
	if err != nil {
		return withCode(ExitInfra, fmt.Errorf("print history: %w", err))
	}
	return nil
}
