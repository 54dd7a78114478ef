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

// closeTimeout bounds the final clean-up of the Daytona backend.
const closeTimeout = 2 * time.Minute

// useDaytona has the run's jobs go to Daytona; it leaves the backend
// local, as docs/command-line.md says, when no API key is usable.
// Warnings go to warn, which keeps them whole beside a live view.
func (b *backend) useDaytona(ctx context.Context, o *runOptions, m *forge.Manifest, runID string, warn io.Writer) error {
	creds := daytona.LoadCredentials(o.env.Getenv, m.Dir)
	if !creds.Usable() {
		if o.noFallback {
			return withCode(ExitInfra, fmt.Errorf("--daytona --no-fallback: %s", creds.Problem))
		}
		fmt.Fprintf(o.env.Stderr, "forge: --daytona: %s; running locally instead (--no-fallback makes this an error)\n", creds.Problem)
		return nil
	}
	opts := daytonaOptions(creds, daytonaSpec(m))
	opts.RunID = runID
	opts.LedgerPath = filepath.Join(o.out, runID, "sandboxes.jsonl")
	opts.Warn = warn
	r, err := daytona.New(ctx, opts)
	if unusable := (*runner.UnusableError)(nil); errors.As(err, &unusable) {
		return err // it says what is wrong with the account
	} else if err != nil {
		return withCode(ExitInfra, fmt.Errorf("daytona backend: %w", err))
	}
	b.name, b.runner, b.undeleted = "daytona", r, r.Undeleted
	// The final clean-up has a context of its own: the run's may already
	// be cancelled.
	b.close = append(b.close, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		return r.Close(ctx)
	})
	return nil
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

// doctorOptions are `forge doctor`'s flags.
type doctorOptions struct {
	env      *Env
	daytona  bool
	manifest string
}

func newDoctorCmd(env *Env, runF func(context.Context, *doctorOptions) error) *cobra.Command {
	o := &doctorOptions{env: env}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this machine (and, with --daytona, a Daytona account) can run tournaments",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runDoctor(cmd.Context(), o)
		},
	}
	cmd.Flags().BoolVar(&o.daytona, "daytona", false, "also create, exec in and delete one Daytona sandbox, timing each phase")
	cmd.Flags().StringVarP(&o.manifest, "file", "f", "forge.yaml", "manifest whose daytona: block and .env to use")
	return cmd
}

func runDoctor(ctx context.Context, o *doctorOptions) error {
	w := o.env.Stdout
	failed := false
	check := func(name string, err error, ok string) {
		if err != nil {
			failed = true
			fmt.Fprintf(w, "✗ %-10s %v\n", name, err)
			return
		}
		fmt.Fprintf(w, "✓ %-10s %s\n", name, ok)
	}
	py, err := exec.LookPath("python3")
	check("python3", err, py)
	lr, err := local.New(local.Options{Getenv: o.env.Getenv})
	desc := ""
	if err == nil {
		desc = lr.Describe()
	}
	check("local", err, desc)
	if root, err := local.DefaultEnvCache(); err == nil {
		fmt.Fprintf(w, "· %-10s %s\n", "envs", describeEnvCache(root))
	}
	creds := daytona.LoadCredentials(o.env.Getenv, filepath.Dir(o.manifest))
	if !o.daytona {
		state := "not configured (" + creds.Problem + ")"
		if creds.Usable() {
			state = creds.String() + "; `forge doctor --daytona` tries it"
		}
		fmt.Fprintf(w, "· %-10s %s\n", "daytona", state)
	} else {
		opts, err := accountOptions(o.env, o.manifest)
		if err == nil {
			fmt.Fprintf(w, "· %-10s %s\n", "daytona", creds.String())
			err = daytona.Doctor(ctx, opts, w)
		}
		if err != nil {
			fmt.Fprintf(w, "✗ %-10s %v\n", "daytona", err)
			return withCode(ExitInfra, err)
		}
	}
	if failed {
		return withCode(ExitInfra, errors.New("doctor: some checks failed"))
	}
	return nil
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
