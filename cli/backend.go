package cli

// The backend a run's jobs go to: local or Daytona, and the local runner
// of the manifest's judges.

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/runner/local"
)

// backend is the runner a run uses, and how to release it.
type backend struct {
	name      string
	runner    runner.Runner
	close     func() error
	undeleted func() []string
	// warn is where Release says why it could not clean up.
	warn     io.Writer
	released sync.Once
}

// chooseBackend picks local or Daytona (docs/command-line.md).
func chooseBackend(ctx context.Context, env *Env, o *runOptions, m *forge.Manifest, runID string, warn io.Writer) (*backend, error) {
	if o.daytona {
		be, err := daytonaBackend(ctx, env, o, m, runID, warn)
		if be != nil {
			be.warn = env.Stderr
		}
		if be != nil || err != nil {
			return be, err
		}
	}
	lr, err := local.New(o.localOptions(env))
	if err != nil {
		return nil, withCode(ExitInfra, fmt.Errorf("local backend: %w", err))
	}
	be := newBackend("local", lr, lr.Close, nil)
	be.warn = env.Stderr
	return be, nil
}

// judgeRunner is the runner of the manifest's judges, which always run
// locally, contained as local candidates are: the local backend itself,
// else (candidates on Daytona) a local runner of its own, which closeFn
// closes; nil when the manifest has no judges.
func judgeRunner(env *Env, o *runOptions, m *forge.Manifest, be *backend) (_ runner.Runner, closeFn func() error, _ error) {
	none := func() error { return nil }
	if len(m.Scoring.Judges()) == 0 {
		return nil, none, nil
	}
	if lr, ok := be.runner.(*local.Runner); ok {
		return lr, none, nil
	}
	lr, err := local.New(o.localOptions(env))
	if err != nil {
		return nil, none, withCode(ExitInfra, fmt.Errorf("local runner for the judges: %w", err))
	}
	return lr, lr.Close, nil
}

// Release closes the backend once the run's jobs have ended, says why it
// could not clean up, and names what it could not delete (forge.Releaser).
func (b *backend) Release() []string {
	b.released.Do(func() {
		if err := b.close(); err != nil {
			fmt.Fprintln(b.warn, "forge: cleanup: "+err.Error())
		}
	})
	return b.undeleted()
}

// newBackend wraps a runner; closeFn runs once however often close is called.
func newBackend(name string, r runner.Runner, closeFn func() error, undeleted func() []string) *backend {
	var once sync.Once
	var cerr error
	if undeleted == nil {
		undeleted = func() []string { return nil }
	}
	return &backend{name: name, runner: r, undeleted: undeleted, close: func() error {
		once.Do(func() {
			if closeFn != nil {
				cerr = closeFn()
			}
		})
		return cerr
	}}
}
