//go:build unix && !linux

package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// platform on Unix without Linux's namespaces and cgroups: process groups.
type platform struct {
	tier Containment
}

func probe(want Containment, _ int) (*platform, error) {
	switch want {
	case ContainAuto, ContainProcessGroup:
		return &platform{tier: ContainProcessGroup}, nil
	case ContainProcess:
		return &platform{tier: ContainProcess}, nil
	}
	return nil, fmt.Errorf("containment %q is only available on Linux", want)
}

func (p *platform) describe() string {
	if p.tier == ContainProcess {
		return "process: only the processes forge started itself"
	}
	return "pgroup: each process in its own process group; a process that leaves its group (setsid) can outlive the job"
}

func (p *platform) pidsLimit() int { return 0 }

func (p *platform) newBox(boxSpec) (box, error) {
	return &groupBox{groups: p.tier == ContainProcessGroup}, nil
}

// groupBox holds the process groups of the processes it started.
type groupBox struct {
	groups bool
	mu     sync.Mutex
	procs  []*os.Process
	ended  bool
}

func (b *groupBox) start(cmd *exec.Cmd) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return errBoxEnded
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return err
	}
	b.procs = append(b.procs, cmd.Process)
	return nil
}

func (b *groupBox) signal(sig os.Signal) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, _ := sig.(syscall.Signal)
	for _, p := range b.procs {
		// Once per process: the group includes its leader.
		if b.groups && s != 0 && syscall.Kill(-p.Pid, s) == nil {
			continue
		}
		_ = p.Signal(sig)
	}
}

func (b *groupBox) kill() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	for _, p := range b.procs {
		_ = p.Kill()
		if b.groups {
			if err := syscall.Kill(-p.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("kill process group %d: %w", p.Pid, err)
			}
		}
	}
	return nil
}

func (b *groupBox) close() error { return b.kill() }
