package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// endWithParent has the kernel send SIGTERM when the process that started
// the emulator ends (go run, killed with kill $!), and sends it now when
// that has happened already.
func endWithParent() {
	parent := os.Getppid()
	if unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0) == nil && os.Getppid() != parent {
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}
}
