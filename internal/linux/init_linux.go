package linux

// The init of a PID namespace, which holds it open: the holder.

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Init is a PID namespace's init: a command (Argv[0] its path, the rest
// its arguments) or, without Argv, the built-in one.
type Init struct {
	Name string // what /proc/PID/comm says of it
	Argv []string
}

// The holder reads a pipe only its starter holds, so it lives until the
// pipe closes or its starter dies; when it ends the kernel kills everything
// left in the namespace. It ignores SIGCHLD, so the kernel reaps the
// orphans it inherits, and as the namespace's PID 1 it gets no signal from
// inside.
//
// initCommands are the inits when there is no built-in one: bash's read
// builtin, whose SIGCHLD handler reaps orphans (installed with SA_RESTART,
// so the read goes on through them), else cat, which leaves them zombies
// until the namespace ends.
var initCommands = []Init{
	{"bash", []string{"/bin/bash", "bash", "-c", "trap '' CHLD; read -r _"}},
	{"bash", []string{"/usr/bin/bash", "bash", "-c", "trap '' CHLD; read -r _"}},
	{"cat", []string{"/bin/cat", "cat"}},
	{"cat", []string{"/usr/bin/cat", "cat"}},
}

// BuiltinName is what the built-in init calls itself.
const BuiltinName = "forge-init"

// Inits lists the inits this machine has, best first.
func Inits() []Init {
	var hs []Init
	if HaveBuiltinInit() {
		hs = append(hs, Init{Name: BuiltinName})
	}
	for _, c := range initCommands {
		if fi, err := os.Stat(c.Argv[0]); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			hs = append(hs, c)
		}
	}
	return hs
}

// Hold starts the init of a new PID namespace, in a process group of its
// own, reading a pipe whose other end, held, only the caller holds: closing
// it ends the init. flags are more namespaces it makes (CLONE_NEWNS,
// CLONE_NEWNET), which it holds too.
func (in Init) Hold(flags uintptr) (p *os.Process, held *os.File, err error) {
	// A blocking pipe: nothing reads it here, so it need not be polled (and
	// the init's read must block).
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("pipe for the PID namespace's init: %w", err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "init-r"), os.NewFile(uintptr(fds[1]), "init-w")
	p, err = in.start(r, flags)
	r.Close()
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	return p, w, nil
}

// start starts the init reading r.
func (in Init) start(r *os.File, flags uintptr) (*os.Process, error) {
	if in.Argv == nil {
		return startBuiltinInit(r, flags)
	}
	cmd := &exec.Cmd{
		Path:        in.Argv[0],
		Args:        in.Argv[1:],
		Stdin:       r,
		Dir:         "/",
		Env:         []string{"PATH=/usr/bin:/bin"},
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | flags, Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start a PID namespace with %s: %w", in.Name, err)
	}
	return cmd.Process, nil
}

// Reaps reports whether the init pid reaps inherited orphans (it ignores
// SIGCHLD, or is bash handling it), waiting briefly for it to get that far.
func Reaps(pid int) bool {
	status := "/proc/" + strconv.Itoa(pid) + "/status"
	chld := uint64(1) << (uint(syscall.SIGCHLD) - 1)
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, err := os.ReadFile(status)
		if err != nil {
			return false
		}
		name, ignored, caught := "", uint64(0), uint64(0)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Name:"); ok {
				name = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
				ignored, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			}
			if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
				caught, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			}
		}
		if ignored&chld != 0 || name == "bash" && caught&chld != 0 {
			return true
		}
		if name == "cat" || time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}
