//go:build unix

package local

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ownGroup makes cmd lead its own process group, away from the terminal's
// Ctrl-C: forge decides how it ends.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// pgroupTier is the pgroup tier: the groups forge's processes lead and, on
// Linux, the processes carrying the job's marker or running as its user.
type pgroupTier struct {
	boxSpec
	threads *spawnThreads
}

func (t pgroupTier) start(cmd *exec.Cmd) error { return startPlain(cmd, t.view, t.steps, t.threads) }

func (t pgroupTier) signal(sig syscall.Signal, started []*os.Process) {
	for _, p := range started {
		_ = syscall.Kill(-p.Pid, sig)
	}
	t.sweep(sig, started, true)
}

// end kills the groups and marked processes until none is found, or killWait.
func (t pgroupTier) end(started []*os.Process) error {
	deadline := time.Now().Add(killWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 20*time.Millisecond) {
		alive := 0
		for _, p := range started {
			if syscall.Kill(-p.Pid, syscall.SIGKILL) == nil {
				alive++
			}
		}
		alive += t.sweep(syscall.SIGKILL, started, false)
		if alive == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes of the job survived SIGKILL for %s", alive, killWait)
		}
		time.Sleep(pause)
	}
}

func (pgroupTier) release() error { return nil }
