//go:build !unix

package scoring

import (
	"os/exec"
	"sync"
	"time"
)

// processGroup kills the judge process itself where process groups do not
// exist.
type processGroup struct {
	cmd *exec.Cmd

	mu   sync.Mutex
	term bool
}

func newProcessGroup(cmd *exec.Cmd) *processGroup { return &processGroup{cmd: cmd} }

func (g *processGroup) terminate(time.Duration) {
	g.mu.Lock()
	g.term = true
	g.mu.Unlock()
	g.kill()
}

func (g *processGroup) kill() {
	if g.cmd.Process != nil {
		_ = g.cmd.Process.Kill()
	}
}

func (g *processGroup) stop() {}

func (g *processGroup) terminated() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.term
}
