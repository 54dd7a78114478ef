//go:build unix

package daytonatest

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd lead its own process group, which killGroup ends.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup kills the process group cmd leads: everything the command
// started and left behind.
func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// processExists says whether this machine has a process pid, a zombie
// included.
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
