package local

// The pidns tier: a job's PID namespace, held open by its init.

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/forge-run/forge/internal/linux"
	"golang.org/x/sys/unix"
)

// pidnsTier is the pidns tier: the job's PID namespace, ended by ending its
// init (the holder), and the job's cgroups for a pids cap.
type pidnsTier struct {
	cg         jobCgroups
	holder     *os.Process
	holderPipe *os.File // closing it ends the holder
	nsfd       int
	ns         linux.Namespace // the namespace's, to recognise it by
	view       view            // how the job's processes see the file system
}

// newPidns starts a job's PID namespace and its holder, outside the job's
// cgroups: it never forks, so the pids cap needs only the job's processes.
func (p *platform) newPidns(v view, steps *jobSteps) (_ tier, err error) {
	t := &pidnsTier{nsfd: -1, view: v}
	if t.cg, err = p.newJobCgroups(false, steps); err != nil {
		return nil, err
	}
	defer steps.add(stepInit, steps.now())
	defer func() {
		if err != nil {
			_ = t.end(nil)
			_ = t.release()
		}
	}()
	if t.holder, t.holderPipe, err = p.holder.Hold(0); err != nil {
		return nil, err
	}
	ns := "/proc/" + strconv.Itoa(t.holder.Pid) + "/ns/pid"
	fd, err := unix.Open(ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", ns, err)
	}
	t.nsfd = fd
	if t.ns, err = linux.NamespaceOf(fd); err != nil {
		return nil, fmt.Errorf("stat %s: %w", ns, err)
	}
	return t, nil
}

func (t *pidnsTier) start(cmd *exec.Cmd) error { return t.cg.start(cmd, t.nsfd, t.view) }

// signal signals every process of the namespace but its init.
func (t *pidnsTier) signal(sig syscall.Signal, _ []*os.Process) {
	holder := t.holder.Pid
	linux.ForEachPid(func(pid int) {
		if pid != holder {
			linux.SignalIf(pid, sig, t.ns.HoldsPid)
		}
	})
}

// end kills the namespace's init, so the kernel kills everything in it; the
// init is reaped only once they are all gone. When the job's pids cgroup
// counts no task (every process of the job is in it, the init is not),
// nothing is left to wait for: the init is reaped in the background.
func (t *pidnsTier) end([]*os.Process) error {
	if t.holder == nil {
		return nil
	}
	// None can start meanwhile: the box is ended, and no task is left to fork.
	gone := t.cg.pidsDir() != "" && t.cg.empty()
	t.cg.emptied = gone
	_ = t.holder.Kill()
	t.holderPipe.Close()
	done := make(chan struct{})
	go func() {
		_, _ = t.holder.Wait()
		close(done)
	}()
	if gone {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-time.After(killWait):
		return fmt.Errorf("processes of the job's PID namespace still running %s after SIGKILL", killWait)
	}
}

func (t *pidnsTier) release() error {
	if t.nsfd >= 0 {
		unix.Close(t.nsfd)
	}
	return t.cg.release()
}

// holders lists the inits this machine has, best first. A variable for tests.
var holders = linux.Inits
