package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/compare"
)

// reportCmdOptions are `forge report`'s flags: a past run's reports, as
// forge run printed and wrote them.
type reportCmdOptions struct {
	env *Env
	reportOptions
	out string
	run string
}

func newReportCmd(env *Env, runF func(*reportCmdOptions) error) *cobra.Command {
	o := &reportCmdOptions{env: env}
	o.noStepSummary = true // the run's own
	cmd := &cobra.Command{
		Use:   "report RUN",
		Short: "Print or write the reports of a past run",
		Long: `Render a past run's reports from its record, as forge run printed and wrote
them: the standings on stdout in --format, and each --report file. RUN is a
run id under --out, a run directory or a results.json.`,
		Example: `  forge report 20261121-153000-ab12 --report report.html
  forge report artifacts/nightly --format markdown`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return flagError{fmt.Errorf("%s takes one run (a run id, a run directory or a results.json), got %d", cmd.CommandPath(), len(args))}
			}
			o.run = args[0]
			return o.Validate()
		},
		RunE: func(*cobra.Command, []string) error { return runF(o) },
	}
	cmd.Flags().StringVar(&o.out, "out", "artifacts", "output root the runs were written under")
	o.reportOptions.addFlags(cmd)
	return cmd
}

func runReport(o *reportCmdOptions) error {
	rec, path, err := compare.Open(o.run, o.out)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	return o.write(o.env, rec, filepath.Dir(path))
}
