package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/internal/text"
)

// validateOptions are `forge validate`'s flags.
type validateOptions struct {
	env      *Env
	manifest string
	harbor   string
}

func newValidateCmd(env *Env, runF func(*validateOptions) error) *cobra.Command {
	o := &validateOptions{env: env}
	cmd := &cobra.Command{
		Use:   "validate [MANIFEST]",
		Short: "Check a manifest without running anything",
		Args:  manifestArg(&o.manifest),
		RunE:  func(*cobra.Command, []string) error { return runF(o) },
	}
	cmd.Flags().StringVarP(&o.manifest, "file", "f", "forge.yaml", "the manifest to check")
	cmd.Flags().StringVar(&o.harbor, "harbor", "", "with the Harbor tasks in `DIR` over the manifest's harbor:")
	return cmd
}

func runValidate(o *validateOptions) error {
	m, err := loadSuite(o.manifest, o.harbor, nil)
	if n := forge.Problems(err); n > 1 {
		// The count says the list is whole: there is nothing more to find
		// by fixing these and running again.
		err = fmt.Errorf("%w\n%d problems in %s", err, n, o.manifest)
	}
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
		tasks = " × " + text.Count(len(plan.Tasks), "task", "tasks")
	}
	for _, n := range m.Notes {
		fmt.Fprintf(o.env.Stderr, "forge: note: %s\n", n)
	}
	fmt.Fprintf(o.env.Stdout, "%s: ok: %s%s, %s, concurrency %d\n",
		o.manifest, text.Count(len(plan.Candidates), "candidate", "candidates"), tasks, text.Count(len(plan.Jobs), "job", "jobs"), plan.Concurrency)
	if ids := plan.ImageTasks(); len(ids) == 1 {
		fmt.Fprintf(o.env.Stdout, "task %s runs in its own image: play it with --daytona\n", ids[0])
	} else if len(ids) > 1 {
		fmt.Fprintf(o.env.Stdout, "%d tasks run in their own image: play them with --daytona\n", len(ids))
	}
	return nil
}
