//go:build !unix

package local

import (
	"errors"
	"fmt"
	"os/exec"
)

// platform without process groups: forge can end only what it started.
type platform struct {
	tier Containment
}

func probe(want Containment, _ int, _ string) (*platform, error) {
	if want != ContainAuto && want != ContainProcess {
		return nil, fmt.Errorf("containment %q is not available on this platform", want)
	}
	return &platform{tier: ContainProcess}, nil
}

func (p *platform) describe() string {
	return "process: only the processes forge started itself; what they start can outlive the job; environments writable by jobs"
}

func (p *platform) pidsLimit() int { return 0 }

// closeCgroups does nothing: there are no cgroups here.
func (p *platform) closeCgroups() error { return nil }

// closeThreads does nothing: no thread is kept here.
func (p *platform) closeThreads() {}

// readOnly is false: there are no mount namespaces here.
func (p *platform) readOnly() bool { return false }

// dropProc is never called: no namespace is kept here.
func (p *platform) dropProc(*nsSlot) error { return errors.ErrUnsupported }

func (p *platform) newTier(Containment, boxSpec) (tier, error) { return processTier{}, nil }

// ownGroup does nothing: there are no process groups here.
func ownGroup(*exec.Cmd) {}

// closeNamespace does nothing: no namespace is kept here.
func closeNamespace(int) {}

// setnsKeepsRoot is false: there are no mount namespaces here.
func setnsKeepsRoot() bool { return false }
