//go:build unix && !linux

package local

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// On Unix without Linux's namespaces and cgroups: process groups.

func probe(want Containment, _ int, _ string) (*platform, error) {
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
		return "process: only the processes forge started itself; environments writable by jobs"
	}
	return "pgroup: each process in its own process group; a process that leaves its group (setsid) can outlive the job; environments writable by jobs"
}

func (p *platform) newTier(t Containment, _ boxSpec) (tier, error) {
	if t == ContainProcessGroup {
		return pgroupTier{}, nil
	}
	return processTier{}, nil
}

// startPlain starts cmd: there are no mount namespaces here.
func startPlain(cmd *exec.Cmd, _ view, _ *jobSteps, _ *spawnThreads) error { return cmd.Start() }

// spawnThreads: processes start from any thread here.
type spawnThreads struct{}

// sweep finds nothing without /proc.
func (pgroupTier) sweep(syscall.Signal, []*os.Process, bool) int { return 0 }
