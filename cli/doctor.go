package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/runner/daytona"
	"github.com/forge-run/forge/runner/local"
)

// accountOptions loads the credentials (environment, then a .env file in
// the manifest's directory) for commands that only talk to the account.
func accountOptions(env *Env, manifest string) (daytona.Options, error) {
	m, err := loadManifest(manifest)
	if err != nil {
		m = nil // no daytona: block; the account's defaults
	}
	creds := daytona.LoadCredentials(env.Getenv, filepath.Dir(manifest))
	if !creds.Usable() {
		return daytona.Options{}, withCode(ExitInfra, errors.New(creds.Problem))
	}
	opts := daytonaOptions(creds, m)
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
		RunE:  func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
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
	m, err := loadManifest(o.manifest)
	if err != nil {
		m = nil // no local: block; the defaults
	}
	lr, err := local.New(local.Options{Getenv: o.env.Getenv, User: block[local.Spec](m, "local").User})
	desc := ""
	if err == nil {
		defer lr.Close() //nolint:errcheck // it ran no job: nothing to wait for
		desc = lr.Describe()
		py, err := lr.Which("python3")
		check("python3", err, py+" (as jobs find it)"+shimNote(py))
	} else {
		py, err := exec.LookPath("python3")
		check("python3", err, py+shimNote(py))
	}
	check("local", err, desc)
	if err == nil {
		fmt.Fprintf(w, "· %-10s %s\n", "user", lr.JobUser())
	}
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

// shimNote says so when the python3 jobs find is a script in front of
// the interpreter (a pyenv or asdf shim), with what one start of it
// costs: every candidate and verifier start pays it.
func shimNote(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	head := make([]byte, 2)
	_, err = io.ReadFull(f, head)
	f.Close()
	if err != nil || string(head) != "#!" {
		return ""
	}
	best := time.Duration(0)
	for range 3 {
		start := time.Now()
		if exec.Command(path, "-c", "").Run() != nil {
			return "; a script, not the interpreter (a shim?)"
		}
		if d := time.Since(start); best == 0 || d < best {
			best = d
		}
	}
	return fmt.Sprintf("; a script in front of the interpreter (a shim?): each start takes %d ms — put the interpreter itself first on PATH for faster jobs", best.Milliseconds())
}
