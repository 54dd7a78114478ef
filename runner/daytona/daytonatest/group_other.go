//go:build !unix

package daytonatest

import "os/exec"

// ownGroup does nothing where there are no process groups.
func ownGroup(*exec.Cmd) {}

// killGroup kills the command's own process only: without process groups,
// what it started is not found.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

// processExists cannot tell without signals: it says no.
func processExists(pid int) bool { return false }
