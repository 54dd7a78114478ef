//go:build !linux

package local

import "errors"

// platform off Linux: process groups where there are any (contain_unix.go),
// else only the processes forge started (contain_nounix.go).
type platform struct {
	tier Containment
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

// closeNamespace does nothing: no namespace is kept here.
func closeNamespace(int) {}

// setnsKeepsRoot is false: there are no mount namespaces here.
func setnsKeepsRoot() bool { return false }
