package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona"
	"github.com/forge-run/forge/runner/local"
)

// closeTimeout bounds the final clean-up of a backend, on a context of its
// own: the run's may already be cancelled.
const closeTimeout = 2 * time.Minute

// daytonaBackend returns the Daytona backend; nil (and no error) to fall
// back to local execution, as docs/command-line.md says, when no API key is usable.
// Warnings go to warn, which keeps them whole beside a live view.
func daytonaBackend(ctx context.Context, env *Env, o *runOptions, m *forge.Manifest, runID string, warn io.Writer) (*backend, error) {
	creds := daytona.LoadCredentials(env.Getenv, m.Dir)
	if !creds.Usable() {
		if o.noFallback {
			return nil, withCode(ExitInfra, fmt.Errorf("--daytona --no-fallback: %s", creds.Problem))
		}
		fmt.Fprintf(env.Stderr, "forge: --daytona: %s; running locally instead (--no-fallback makes this an error)\n", creds.Problem)
		return nil, nil
	}
	opts := daytonaOptions(creds, daytonaSpec(m))
	opts.RunID = runID
	opts.LedgerPath = filepath.Join(o.out, runID, "sandboxes.jsonl")
	opts.Warn = warn
	r, err := daytona.New(ctx, opts)
	if err != nil {
		var unusable *runner.UnusableError
		if errors.As(err, &unusable) {
			return nil, err
		}
		return nil, withCode(ExitInfra, fmt.Errorf("daytona backend: %w", err))
	}
	closeFn := func() error {
		cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		return r.Close(cctx)
	}
	return newBackend("daytona", r, closeFn, r.Undeleted), nil
}

// daytonaSpec is m's daytona: block as runner/daytona decoded it (empty
// when m has none).
func daytonaSpec(m *forge.Manifest) daytona.Spec {
	s, _ := m.Blocks["daytona"].(daytona.Spec)
	return s
}

// daytonaOptions maps the credentials and the manifest's daytona: block.
func daytonaOptions(creds daytona.Credentials, d daytona.Spec) daytona.Options {
	opts := daytona.Options{
		APIKey:          creds.APIKey,
		APIURL:          creds.APIURL,
		Target:          creds.Target,
		Snapshot:        d.Snapshot,
		Image:           d.Image,
		CPU:             d.Resources.CPU,
		MemoryGB:        d.Resources.Memory,
		DiskGB:          d.Resources.Disk,
		NetworkBlockAll: d.NetworkBlockAll, NetworkAllowList: d.NetworkAllowList,
		CreateRate:      d.CreateRate,
		AutoStopMinutes: d.AutoStop,
		Env:             d.Env,
		Labels:          d.Labels,
	}
	if d.Volume != nil {
		v := *d.Volume // Validate fills in its mount
		opts.Volume = &v
	}
	return opts
}

// accountOptions loads the credentials (environment, then a .env file in
// the manifest's directory) for commands that only talk to the account.
func accountOptions(env *Env, manifest string) (daytona.Options, error) {
	dir := filepath.Dir(manifest)
	var spec daytona.Spec
	if m, err := loadManifest(manifest); err == nil {
		spec = daytonaSpec(m)
	}
	creds := daytona.LoadCredentials(env.Getenv, dir)
	if !creds.Usable() {
		return daytona.Options{}, withCode(ExitInfra, errors.New(creds.Problem))
	}
	opts := daytonaOptions(creds, spec)
	opts.Warn = env.Stderr
	return opts, nil
}

func newDoctorCmd(env *Env) *cobra.Command {
	var (
		withDaytona bool
		manifest    string
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this machine (and, with --daytona, a Daytona account) can run tournaments",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			failed := false
			check := func(name string, err error, ok string) {
				if err != nil {
					failed = true
					fmt.Fprintf(env.Stdout, "✗ %-10s %v\n", name, err)
					return
				}
				fmt.Fprintf(env.Stdout, "✓ %-10s %s\n", name, ok)
			}
			py, err := exec.LookPath("python3")
			check("python3", err, py)
			lr, err := local.New(local.Options{Getenv: env.Getenv})
			desc := ""
			if err == nil {
				desc = lr.Describe()
			}
			check("local", err, desc)
			if root, err := local.DefaultEnvCache(); err == nil {
				fmt.Fprintf(env.Stdout, "· %-10s %s\n", "envs", describeEnvCache(root))
			}
			creds := daytona.LoadCredentials(env.Getenv, filepath.Dir(manifest))
			if !withDaytona {
				state := "not configured (" + creds.Problem + ")"
				if creds.Usable() {
					state = creds.String() + "; `forge doctor --daytona` tries it"
				}
				fmt.Fprintf(env.Stdout, "· %-10s %s\n", "daytona", state)
			} else {
				opts, err := accountOptions(env, manifest)
				if err == nil {
					fmt.Fprintf(env.Stdout, "· %-10s %s\n", "daytona", creds.String())
					err = daytona.Doctor(cmd.Context(), opts, env.Stdout)
				}
				if err != nil {
					fmt.Fprintf(env.Stdout, "✗ %-10s %v\n", "daytona", err)
					return asInfra(err)
				}
			}
			if failed {
				return withCode(ExitInfra, errors.New("doctor: some checks failed"))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&withDaytona, "daytona", false, "also create, exec in and delete one Daytona sandbox, timing each phase")
	cmd.Flags().StringVarP(&manifest, "file", "f", "forge.yaml", "manifest whose daytona: block and .env to use")
	return cmd
}

// asInfra makes any error of an account command an infrastructure error
// (exit 3), keeping a usage error a usage error.
func asInfra(err error) error {
	var ee *exitError
	var unusable *runner.UnusableError
	if errors.As(err, &ee) || errors.As(err, &unusable) {
		return err
	}
	return withCode(ExitInfra, err)
}

// describeEnvCache says what the local environment cache holds.
func describeEnvCache(root string) string {
	envs, err := local.ListEnvironments(root)
	if err != nil {
		return err.Error()
	}
	var bytes int64
	finished := 0
	for _, e := range envs {
		bytes += e.Bytes
		if !e.Leftover {
			finished++
		}
	}
	s := fmt.Sprintf("%s: %d %s, %s", root, finished, text.Plural(finished, "environment", "environments"), text.Bytes(float64(bytes)))
	if left := len(envs) - finished; left > 0 {
		s += fmt.Sprintf(", %d left by unfinished or failed builds", left)
	}
	return s + " (`forge gc --local` deletes old ones)"
}
