package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"time"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/daytona"
	"github.com/forge-run/forge/runner/local"
)

// backend is where a run's jobs go, local or Daytona, with the runner of
// the manifest's judges, and how to let go of both.
type backend struct {
	name   string
	runner runner.Runner
	// judges always run locally, contained as local candidates are: the
	// local backend itself, else a local runner of their own; nil when the
	// manifest has none.
	judges    runner.Runner
	close     []func() error
	undeleted func() []string
	// warn is where Release says why it could not clean up.
	warn     io.Writer
	released sync.Once
}

var _ forge.Releaser = (*backend)(nil)

// chooseBackend picks local or Daytona (docs/command-line.md); the Daytona
// runner's warnings and Release's go to warn.
func chooseBackend(ctx context.Context, o *runOptions, m *forge.Manifest, runID string, warn io.Writer) (*backend, error) {
	be := &backend{name: "local", warn: warn}
	if o.daytona {
		if err := be.useDaytona(ctx, o, m, runID, warn); err != nil {
			return nil, err
		}
	}
	judges := len(m.Scoring.Judges()) > 0
	if be.runner != nil && !judges {
		return be, nil
	}
	opts := o.localOptions()
	opts.User = block[local.Spec](m, "local").User
	opts.Hide = []string{m.Dir, o.out} // the candidates' secrets, the others' artifacts
	lr, err := local.New(opts)
	if err != nil {
		be.Release()
		what := "local backend"
		if be.runner != nil {
			what = "local runner for the judges"
		}
		return nil, withCode(ExitInfra, fmt.Errorf("%s: %w", what, err))
	}
	be.close = append(be.close, lr.Close)
	if be.runner == nil {
		be.runner = lr
		if lr.AsRoot() {
			fmt.Fprintln(warn, "forge: warning: "+lr.JobUser())
		}
		if seen := lr.Visible(); seen != "" {
			fmt.Fprintln(warn, "forge: warning: "+seen)
		}
	}
	if judges {
		be.judges = lr
	}
	return be, nil
}

// Release closes the runners once the run's jobs have ended, says why it
// could not clean up, and names what it could not delete (forge.Releaser).
func (b *backend) Release() []string {
	b.released.Do(func() {
		for _, c := range b.close {
			if err := c(); err != nil {
				fmt.Fprintln(b.warn, "forge: cleanup: "+err.Error())
			}
		}
	})
	if b.undeleted == nil {
		return nil
	}
	return b.undeleted()
}

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
	opts := daytonaOptions(creds, m)
	opts.RunID = runID
	opts.LedgerPath = filepath.Join(o.out, runID, "sandboxes.jsonl")
	opts.Warn = warn
	r, err := daytona.New(ctx, opts)
	if errors.As(err, new(*runner.UnusableError)) {
		return err // it says what is wrong with the account
	} else if err != nil {
		return withCode(ExitInfra, fmt.Errorf("daytona backend: %w", err))
	}
	b.name, b.runner, b.undeleted = "daytona", r, r.Undeleted
	// The final clean-up has a context of its own, bounded: the run's may
	// already be cancelled.
	b.close = append(b.close, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return r.Close(ctx)
	})
	return nil
}

// block is m's top-level block name (local:, daytona:) as its backend
// decoded it; the zero T when m is nil or has none.
func block[T any](m *forge.Manifest, name string) T {
	var b T
	if m != nil {
		b, _ = m.Blocks[name].(T)
	}
	return b
}

// daytonaOptions maps the credentials and the daytona: block of m.
func daytonaOptions(creds daytona.Credentials, m *forge.Manifest) daytona.Options {
	d := block[daytona.Spec](m, "daytona")
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
		opts.Volume = new(*d.Volume) // a copy; Validate fills in its mount
	}
	return opts
}
