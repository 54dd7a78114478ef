package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/runner/daytona"
	"github.com/forge-run/forge/runner/local"
)

// gcOptions are `forge gc`'s flags: what forge leaves on purpose
// (environments, kept for the next run) or by accident (sandboxes it
// could not delete), collected on both backends.
type gcOptions struct {
	env *Env
	daytona.GCOptions
	manifest    string
	onlyLocal   bool
	onlyDaytona bool
}

// Validate checks the flags before anything is deleted.
func (o *gcOptions) Validate() error {
	return firstBroken([]rule{
		{o.OlderThan < 0, fmt.Sprintf("--older-than %s: must not be negative", o.OlderThan)},
		{o.onlyLocal && o.onlyDaytona, "--local and --daytona: give one, or neither for both"},
	})
}

func newGCCmd(env *Env, runF func(context.Context, *gcOptions) error) *cobra.Command {
	o := &gcOptions{env: env}
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Delete what forge left: local environments, and Daytona sandboxes and snapshots no live run uses",
		Long: `Delete what forge left behind and no live forge uses:

  local    environments in the cache ($XDG_CACHE_HOME/forge/env; as root
           /var/cache/forge/env, and the one under root's home an older forge
           used) last used more than --older-than ago, and what interrupted or
           failed builds left there;
  daytona  sandboxes forge labelled that no live run owns, created more than
           --older-than ago, then forge's environment snapshots (forge-env-*) that
           no remaining sandbox was created from, last used more than --older-than ago.

Both by default; Daytona only when an API key is configured (DAYTONA_API_KEY, or a
.env beside the manifest). --local or --daytona limits it to one.`,
		Args:    cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error { return o.Validate() },
		RunE:    func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.DurationVar(&o.OlderThan, "older-than", time.Hour, "spare what was created or used more recently than this (runs on other machines keep no ledger here); 0 spares none")
	f.BoolVar(&o.DryRun, "dry-run", false, "list what would be deleted; delete nothing")
	f.BoolVar(&o.onlyLocal, "local", false, "only the local environment cache")
	f.BoolVar(&o.onlyDaytona, "daytona", false, "only Daytona (an API key is then required)")
	f.StringVar(&o.OutRoot, "out", "artifacts", "output root whose run ledgers say which runs are live")
	f.StringVarP(&o.manifest, "file", "f", "forge.yaml", "manifest whose directory may hold a .env with DAYTONA_API_KEY")
	return cmd
}

// runGC collects on each backend asked for; every failure is exit 3.
func runGC(ctx context.Context, o *gcOptions) error {
	var errs []error
	if !o.onlyDaytona {
		roots, err := local.EnvCaches()
		errs = append(errs, err)
		for _, root := range roots {
			errs = append(errs, local.GCEnvironments(root, local.GCOptions{OlderThan: o.OlderThan, DryRun: o.DryRun}, o.env.Stdout))
		}
	}
	if !o.onlyLocal {
		creds := daytona.LoadCredentials(o.env.Getenv, filepath.Dir(o.manifest))
		if !o.onlyDaytona && !creds.Usable() {
			fmt.Fprintf(o.env.Stdout, "gc: daytona: skipped, not configured (%s)\n", creds.Problem)
			return withCode(ExitInfra, errors.Join(errs...))
		}
		opts, err := accountOptions(o.env, o.manifest)
		if err == nil {
			err = daytona.GC(ctx, opts, o.GCOptions, o.env.Stdout)
		}
		errs = append(errs, err)
	}
	return withCode(ExitInfra, errors.Join(errs...))
}
