//go:build !unix

package local

import (
	"fmt"
	"os/exec"
)

// Without process groups forge can end only what it started.

func probe(want Containment, _ int, _ string) (*platform, error) {
	if want != ContainAuto && want != ContainProcess {
		return nil, fmt.Errorf("containment %q is not available on this platform", want)
	}
	return &platform{tier: ContainProcess}, nil
}

func (p *platform) describe() string {
	return "process: only the processes forge started itself; what they start can outlive the job; environments writable by jobs"
}

func (p *platform) newTier(Containment, boxSpec) (tier, error) { return processTier{}, nil }

// ownGroup does nothing: there are no process groups here.
func ownGroup(*exec.Cmd) {}
