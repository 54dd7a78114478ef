package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/forge"
)

func newValidateCmd(env *Env) *cobra.Command {
	var path string
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check a manifest without running anything",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := loadManifest(path)
			if err != nil {
				return withCode(ExitUsage, err)
			}
			look, err := lookup(env, m)
			if err != nil {
				return withCode(ExitUsage, err)
			}
			plan, err := m.Plan(forge.Overrides{Lookup: look})
			if err != nil {
				return withCode(ExitUsage, err)
			}
			tasks := ""
			if len(plan.Tasks) > 0 {
				tasks = fmt.Sprintf(" × %d tasks", len(plan.Tasks))
			}
			fmt.Fprintf(env.Stdout, "%s: ok: %d candidates%s, %d jobs, concurrency %d\n",
				path, len(plan.Candidates), tasks, len(plan.Jobs), plan.Concurrency)
			return nil
		},
	}
	cmd.Flags().StringVarP(&path, "file", "f", "forge.yaml", "the manifest to check")
	return cmd
}
