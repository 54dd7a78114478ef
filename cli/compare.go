package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/compare"
)

// compareOptions are `forge compare`'s flags.
type compareOptions struct {
	env        *Env
	runs       []string // the runs compared: RUN_A RUN_B
	out        string
	format     string
	maxDrop    float64
	maxDropSet bool
}

// Validate checks the arguments and flags before any run is read.
func (o *compareOptions) Validate() error {
	_, formatErr := parseCompareFormat(o.format)
	return firstBroken([]rule{
		{len(o.runs) != 2, fmt.Sprintf("compare takes two runs (RUN_A RUN_B), got %d", len(o.runs))},
		{formatErr != nil, fmt.Sprint(formatErr)},
		{o.maxDropSet && (o.maxDrop < 0 || o.maxDrop > 1), fmt.Sprintf("--max-drop %g: must be between 0 and 1 (a score difference)", o.maxDrop)},
	})
}

// parseCompareFormat reads --format: table (or text), markdown (or md), json.
func parseCompareFormat(s string) (string, error) {
	names := map[string]string{"table": "table", "text": "table", "markdown": "markdown", "md": "markdown", "json": "json"}
	if f, ok := names[strings.ToLower(strings.TrimSpace(s))]; ok {
		return f, nil
	}
	return "", fmt.Errorf("--format %q: want one of table, markdown, json", s)
}

func newCompareCmd(env *Env, runF func(*compareOptions) error) *cobra.Command {
	o := &compareOptions{env: env}
	cmd := &cobra.Command{
		Use:   "compare RUN_A RUN_B",
		Short: "Compare two runs: what changed for each candidate, and is it significant",
		Long: `Compare run RUN_B (the head, e.g. tonight's) with run RUN_A (the base, e.g.
last night's). A run is a run id under --out, a run directory, or a
results.json path.

For each candidate: the mean score before and after, the change and whether
it is significant (two-sided Welch t-test on the trial scores, alpha 0.05;
with a single trial on either side nothing is), runtime, success rate and
trials. A candidate is improved, regressed, unchanged, new or gone.

With --max-drop X, forge exits 1 when a candidate's score dropped
significantly by more than X, and names each such candidate on stderr.`,
		Example: `  forge compare 20261120-153000-aa11 20261121-153000-ab12
  forge compare last-night tonight --max-drop 0.05 --format markdown >> "$GITHUB_STEP_SUMMARY"`,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.runs = args
			o.maxDropSet = cmd.Flags().Changed("max-drop")
			return o.Validate()
		},
		RunE: func(*cobra.Command, []string) error { return runF(o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "artifacts", "output root that run ids are looked up in")
	f.StringVar(&o.format, "format", "table", "stdout format: table, markdown or json")
	f.Float64Var(&o.maxDrop, "max-drop", 0, "exit 1 when a candidate's score dropped significantly by more than this (0..1)")
	return cmd
}

func runCompare(o *compareOptions) error {
	base, _, err := compare.Open(o.runs[0], o.out)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	head, _, err := compare.Open(o.runs[1], o.out)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	rep := compare.Runs(base, head)
	format, _ := parseCompareFormat(o.format) // validated
	switch format {
	case "markdown":
		err = compare.WriteMarkdown(o.env.Stdout, rep)
	case "json":
		enc := json.NewEncoder(o.env.Stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	default:
		err = compare.WriteTable(o.env.Stdout, rep, o.env.StdoutTTY)
	}
	if err != nil {
		return withCode(ExitInfra, fmt.Errorf("print comparison: %w", err))
	}
	if o.maxDropSet {
		if drops := rep.Drops(o.maxDrop); len(drops) > 0 {
			for _, d := range drops {
				fmt.Fprintln(o.env.Stderr, "forge: regression: "+d)
			}
			return errSilent{code: ExitGateFailed}
		}
	}
	return nil
}
