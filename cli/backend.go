package cli

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/runner"
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
// runner's warnings go to warn.
func chooseBackend(ctx context.Context, o *runOptions, m *forge.Manifest, runID string, warn io.Writer) (*backend, error) {
	be := &backend{name: "local", warn: o.env.Stderr}
	if o.daytona {
		if err := be.useDaytona(ctx, o, m, runID, warn); err != nil {
			return nil, err
		}
	}
	judges := len(m.Scoring.Judges()) > 0
	if be.runner != nil && !judges {
		return be, nil
	}
	lr, err := local.New(o.localOptions())
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
