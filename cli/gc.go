package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/runner/daytona"
	"github.com/forge-run/forge/runner/local"
)

// newGCCmd is forge gc: what forge leaves on purpose (environments, kept
// for the next run) or by accident (sandboxes it could not delete),
// collected on both backends.
func newGCCmd(env *Env) *cobra.Command {
	var (
		g           daytona.GCOptions
		manifest    string
		onlyLocal   bool
		onlyDaytona bool
	)
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Delete what forge left: local environments, and Daytona sandboxes and snapshots no live run uses",
		Long: `Delete what forge left behind and no live forge uses:

  local    environments in the cache ($XDG_CACHE_HOME/forge/env) last used more
           than --older-than ago, and what interrupted or failed builds left there;
  daytona  sandboxes forge labelled that no live run owns, created more than
           --older-than ago, then forge's environment snapshots (forge-env-*) that
           no remaining sandbox was created from, last used more than --older-than ago.

Both by default; Daytona only when an API key is configured (DAYTONA_API_KEY, or a
.env beside the manifest). --local or --daytona limits it to one.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.OlderThan < 0 {
				return flagError{fmt.Errorf("--older-than %s: must not be negative", g.OlderThan)}
			}
			if onlyLocal && onlyDaytona {
				return flagError{errors.New("--local and --daytona: give one, or neither for both")}
			}
			var errs []error
			if !onlyDaytona {
				root, err := local.DefaultEnvCache()
				if err == nil {
					err = local.GCEnvironments(root, local.GCOptions{OlderThan: g.OlderThan, DryRun: g.DryRun}, env.Stdout)
				}
				if err != nil {
					errs = append(errs, withCode(ExitInfra, err))
				}
			}
			if !onlyLocal {
				creds := daytona.LoadCredentials(env.Getenv, filepath.Dir(manifest))
				if !onlyDaytona && !creds.Usable() {
					fmt.Fprintf(env.Stdout, "gc: daytona: skipped, not configured (%s)\n", creds.Problem)
					return errors.Join(errs...)
				}
				opts, err := accountOptions(env, manifest)
				if err == nil {
					err = daytona.GC(cmd.Context(), opts, g, env.Stdout)
				}
				if err != nil {
					errs = append(errs, asInfra(err))
				}
			}
			return errors.Join(errs...)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&g.OlderThan, "older-than", time.Hour, "spare what was created or used more recently than this (runs on other machines keep no ledger here); 0 spares none")
	f.BoolVar(&g.DryRun, "dry-run", false, "list what would be deleted; delete nothing")
	f.BoolVar(&onlyLocal, "local", false, "only the local environment cache")
	f.BoolVar(&onlyDaytona, "daytona", false, "only Daytona (an API key is then required)")
	f.StringVar(&g.OutRoot, "out", "artifacts", "output root whose run ledgers say which runs are live")
	f.StringVarP(&manifest, "file", "f", "forge.yaml", "manifest whose directory may hold a .env with DAYTONA_API_KEY")
	return cmd
}
