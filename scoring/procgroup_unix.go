//go:build unix

package scoring

import (
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// processGroup signals a judge and everything it started: the judge leads
// its own process group.
type processGroup struct {
	cmd *exec.Cmd

	mu    sync.Mutex
	term  bool
	timer *time.Timer
}

func newProcessGroup(cmd *exec.Cmd) *processGroup {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return &processGroup{cmd: cmd}
}

// terminate sends SIGTERM to the group now and SIGKILL after grace.
func (g *processGroup) terminate(grace time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.term {
		return
	}
	g.term = true
	g.signal(syscall.SIGTERM)
	g.timer = time.AfterFunc(grace, g.kill)
}

// kill sends SIGKILL to the group.
func (g *processGroup) kill() { g.signal(syscall.SIGKILL) }

// stop cancels a pending SIGKILL.
func (g *processGroup) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timer != nil {
		g.timer.Stop()
	}
}

// terminated reports whether terminate was called.
func (g *processGroup) terminated() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.term
}

func (g *processGroup) signal(sig syscall.Signal) {
	if g.cmd.Process == nil || g.cmd.Process.Pid <= 0 {
		return
	}
	_ = syscall.Kill(-g.cmd.Process.Pid, sig)
}
