package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/forge"
)

// validateOptions are `forge validate`'s flags.
type validateOptions struct {
	env      *Env
	manifest string
}

func newValidateCmd(env *Env, runF func(*validateOptions) error) *cobra.Command {
	o := &validateOptions{env: env}
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check a manifest without running anything",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runF(o)
		},
	}
	cmd.Flags().StringVarP(&o.manifest, "file", "f", "forge.yaml", "the manifest to check")
	return cmd
}

func runValidate(o *validateOptions) error {
	m, err := loadManifest(o.manifest)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	look, err := lookup(o.env, m)
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
	fmt.Fprintf(o.env.Stdout, "%s: ok: %d candidates%s, %d jobs, concurrency %d\n",
		o.manifest, len(plan.Candidates), tasks, len(plan.Jobs), plan.Concurrency)
	return nil
}
