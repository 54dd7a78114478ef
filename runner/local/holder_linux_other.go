//go:build linux && !amd64

package local

// No built-in init for this architecture: the PID namespace's init is
// bash (or cat).
var holderCode []byte

const holderMachine = 0
