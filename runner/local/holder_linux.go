package local

// How a job's PID namespace gets its init (the holder).

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// holderInit is a command (argv[0] its path) or, without argv, the built-in init.
type holderInit struct {
	name string // what /proc/PID/comm says of it
	argv []string
}

// The holder reads a pipe only forge holds, so it lives until forge closes
// the pipe or dies; when it ends the kernel kills everything left in the
// namespace. It ignores SIGCHLD, so the kernel reaps the orphans it
// inherits, and as the namespace's PID 1 it gets no signal from inside.
//
// holderCommands are the inits of a job's PID namespace when there is no
// built-in one: bash's read builtin, whose SIGCHLD handler reaps orphans
// (installed with SA_RESTART, so the read goes on through them), else cat,
// which leaves them zombies until the job ends.
var holderCommands = []holderInit{
	{"bash", []string{"/bin/bash", "bash", "-c", "trap '' CHLD; read -r _"}},
	{"bash", []string{"/usr/bin/bash", "bash", "-c", "trap '' CHLD; read -r _"}},
	{"cat", []string{"/bin/cat", "cat"}},
	{"cat", []string{"/usr/bin/cat", "cat"}},
}

// holders lists the inits this machine has, best first. A variable for tests.
var holders = func() []holderInit {
	var hs []holderInit
	if haveBuiltinInit() {
		hs = append(hs, holderInit{name: "forge-init"})
	}
	for _, c := range holderCommands {
		if executable(c.argv[0], nil) == nil {
			hs = append(hs, c)
		}
	}
	return hs
}

// start starts the init of a new PID namespace, reading r.
func (h holderInit) start(r *os.File) (*os.Process, error) {
	if h.argv == nil {
		return startBuiltinInit(r)
	}
	null, err := devNull()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        h.argv[0],
		Args:        h.argv[1:],
		Stdin:       r,
		Stdout:      null,
		Stderr:      null,
		Dir:         "/",
		Env:         []string{"PATH=/usr/bin:/bin"},
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start a PID namespace with %s: %w", h.name, err)
	}
	return cmd.Process, nil
}
