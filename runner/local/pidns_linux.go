package local

// The pidns tier: the init that holds a job's PID namespace open, and how
// the namespace is recognised and ended.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The init of a job's PID namespace ("holder") reads a pipe that only forge
// holds: it lives until forge closes the pipe, which forge also does by
// dying, and when it ends the kernel kills every process left in the
// namespace. It is bash's read builtin with SIGCHLD trapped to nothing: one
// program start (exec'ing cat after the trap cost a second one, ~3 ms of a
// job's CPU here). bash keeps its own SIGCHLD handler while it runs; that
// handler reaps every child it is told of (waitpid(-1)), so the orphans the
// init inherits are reaped at once, and it is installed with SA_RESTART, so
// the read goes on through any number of them (tested: hundreds of orphans
// exiting, no zombie, the read unbroken). The read ends only at EOF. As the
// namespace's PID 1, bash gets from inside the namespace only the signals
// it handles, and SIGCHLD is the only one. Without bash the init is cat,
// which installs no signal handler, so no signal interrupts it, but orphans
// stay zombies until the job ends.
var holderCommands = [][]string{
	{"/bin/bash", "bash", "-c", "trap '' CHLD; read -r _"},
	{"/usr/bin/bash", "bash", "-c", "trap '' CHLD; read -r _"},
	{"/bin/cat", "cat"},
	{"/usr/bin/cat", "cat"},
}

// holderCommand returns the first holder command this machine has.
func holderCommand() ([]string, error) {
	for _, c := range holderCommands {
		if executable(c[0]) == nil {
			return c, nil
		}
	}
	return nil, errors.New("found neither bash nor cat for the PID namespace's init")
}

// pidnsTier is the pidns tier: the job's own PID namespace, whose init
// (the holder) forge ends to end everything in it, and the job's cgroups
// for a pids cap.
type pidnsTier struct {
	cg         jobCgroups
	holder     *exec.Cmd
	holderPipe *os.File // closing it ends the holder
	holderDone chan error
	nsfd       int
	ns         unix.Stat_t // the namespace's, to recognise it by
}

// newPidns starts a job's PID namespace: its holder, in the job's cgroups.
func (p *platform) newPidns() (_ tier, err error) {
	t := &pidnsTier{nsfd: -1}
	if t.cg, err = p.newJobCgroups(false); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = t.end(nil)
			_ = t.release()
		}
	}()
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe for the PID namespace holder: %w", err)
	}
	cmd := &exec.Cmd{
		Path:        p.holder[0],
		Args:        p.holder[1:],
		Stdin:       r,
		Dir:         "/",
		Env:         []string{"PATH=/usr/bin:/bin"},
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Setpgid: true},
	}
	err = t.cg.start(cmd, -1)
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start a PID namespace: %w", err)
	}
	t.holder, t.holderPipe, t.holderDone = cmd, w, make(chan error, 1)
	go func() { t.holderDone <- cmd.Wait() }()

	ns := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/pid"
	fd, err := unix.Open(ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", ns, err)
	}
	t.nsfd = fd
	if err := unix.Fstat(fd, &t.ns); err != nil {
		return nil, fmt.Errorf("stat %s: %w", ns, err)
	}
	return t, nil
}

func (t *pidnsTier) start(cmd *exec.Cmd) error { return t.cg.start(cmd, t.nsfd) }

// signal signals every process of the namespace but its init.
func (t *pidnsTier) signal(sig syscall.Signal, _ []*os.Process) {
	holder := t.holder.Process.Pid
	forEachPid(func(pid int) {
		if pid != holder {
			signalIf(pid, sig, t.inNamespace)
		}
	})
}

// inNamespace reports whether pid lives in the job's PID namespace.
func (t *pidnsTier) inNamespace(pid int) bool {
	var st unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/pid", &st) != nil {
		return false
	}
	return st.Dev == t.ns.Dev && st.Ino == t.ns.Ino
}

// end kills the namespace's init, upon which the kernel kills everything
// else in it; the init is reaped only once they are all gone.
func (t *pidnsTier) end([]*os.Process) error {
	if t.holder == nil {
		return nil
	}
	_ = t.holder.Process.Kill()
	t.holderPipe.Close()
	select {
	case <-t.holderDone:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("processes of the job's PID namespace still running %s after SIGKILL", killWait)
	}
}

func (t *pidnsTier) release() error {
	if t.nsfd >= 0 {
		unix.Close(t.nsfd)
	}
	return t.cg.remove()
}

// holderReaps reports whether the holder pid reaps the orphans it inherits:
// bash handling or ignoring SIGCHLD (its handler reaps every child), or any
// program ignoring it (the kernel then reaps them). It waits briefly for bash
// to install its handler.
func holderReaps(pid int) bool {
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
		if name != "bash" || time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}
