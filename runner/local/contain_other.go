//go:build !unix

package local

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
)

// platform without process groups: forge can end only what it started.
type platform struct {
	tier Containment
}

func probe(want Containment, _ int) (*platform, error) {
	if want != ContainAuto && want != ContainProcess {
		return nil, fmt.Errorf("containment %q is not available on this platform", want)
	}
	return &platform{tier: ContainProcess}, nil
}

func (p *platform) describe() string {
	return "process: only the processes forge started itself; what they start can outlive the job"
}

func (p *platform) pidsLimit() int { return 0 }

func (p *platform) newBox(boxSpec) (box, error) { return &procBox{}, nil }

type procBox struct {
	mu    sync.Mutex
	procs []*os.Process
	ended bool
}

func (b *procBox) start(cmd *exec.Cmd) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return errBoxEnded
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	b.procs = append(b.procs, cmd.Process)
	return nil
}

func (b *procBox) signal(sig os.Signal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.procs {
		if p.Signal(sig) != nil {
			_ = p.Kill() // no SIGTERM here: end it now
		}
	}
}

func (b *procBox) kill() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	for _, p := range b.procs {
		_ = p.Kill()
	}
	return nil
}

func (b *procBox) close() error { return b.kill() }
