package local

// Starting processes inside a job's PID namespace and v1 pids cgroup.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// spawn starts cmd, from a locked thread moved into the PID namespace (nsfd),
// v1 pids cgroup (v1Tasks) or read-only mount namespace (ro) when given
// (they apply to the calling thread's children), and back; a thread that
// cannot go back, or has a mount namespace of its own, is never unlocked,
// so the runtime ends it.
func spawn(cmd *exec.Cmd, nsfd, v1Tasks int, v view, steps *jobSteps) error {
	start, mark := steps.now(), steps.total()
	defer func() { steps.addRest(stepStart, start, mark) }()
	if nsfd < 0 && v1Tasks < 0 && v.plain() {
		return cmd.Start()
	}
	h, err := home()
	if err != nil {
		return err
	}
	return onLockedThread(func() (bool, error) { return spawnLocked(cmd, nsfd, v1Tasks, v, h, steps) })
}

// spawnLocked is spawn on the locked thread; clean: the thread is back home.
func spawnLocked(cmd *exec.Cmd, nsfd, v1Tasks int, v view, h homes, steps *jobSteps) (clean bool, err error) {
	clean = true
	if !v.plain() {
		t := steps.now()
		changed, err := enterSlotView(v)
		steps.add(stepMounts, t)
		if err != nil {
			return !changed, err
		}
		defer func() { clean = false }()
	}
	if v1Tasks >= 0 {
		if h.tasks < 0 {
			return clean, errors.New("join a pids cgroup: forge's own v1 pids cgroup is unknown")
		}
		// "0" is the writing thread: the kernel then moves it alone, without
		// the write lock on every thread group (its own tid takes that lock,
		// and waits an RCU grace period: about 10 ms a job).
		t := steps.now()
		_, err := unix.Write(v1Tasks, []byte("0"))
		steps.add(stepJoin, t)
		if err != nil {
			return clean, fmt.Errorf("join the job's pids cgroup: %w", err)
		}
		defer func() {
			t := steps.now()
			if _, err := unix.Write(h.tasks, []byte("0")); err != nil {
				clean = false
			}
			steps.add(stepJoin, t)
		}()
	}
	if nsfd >= 0 {
		if err := unix.Setns(nsfd, unix.CLONE_NEWPID); err != nil {
			return clean, fmt.Errorf("enter the job's PID namespace: %w", err)
		}
		defer func() {
			if err := unix.Setns(h.ns, unix.CLONE_NEWPID); err != nil {
				clean = false
			}
		}()
	}
	return clean, cmd.Start()
}

// homes are forge's own PID namespace and v1 pids tasks file (-1 if none),
// open for the process's life: a spawning thread goes back to them.
type homes struct{ ns, tasks int }

// home opens forge's homes once, from a locked thread (/proc/thread-self):
// /proc/self names the main thread, which may be in a job's pids cgroup.
var home = sync.OnceValues(func() (homes, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := homes{ns: -1, tasks: -1}
	fd, err := unix.Open("/proc/thread-self/ns/pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return h, fmt.Errorf("open forge's PID namespace: %w", err)
	}
	h.ns = fd
	if dir := findCgroups().pids; dir != "" {
		if fd, err := unix.Open(filepath.Join(dir, "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0); err == nil {
			h.tasks = fd
		}
	}
	return h, nil
})

// forEachPid calls f for every process in /proc.
func forEachPid(f func(pid int)) {
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			f(pid)
		}
	}
}

// signalIf sends sig to pid when match holds, holding a pidfd across the check
// so a reused pid is never hit; it reports whether the signal was delivered.
func signalIf(pid int, sig syscall.Signal, match func(int) bool) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOSYS) {
			return false
		}
		if match != nil && !match(pid) {
			return false
		}
		return syscall.Kill(pid, sig) == nil
	}
	defer unix.Close(fd)
	if match != nil && !match(pid) {
		return false
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0) == nil
}

// rescueThreads moves forge's threads in the v1 cgroup dir back home, a safety
// net (only the spawning thread is moved in, and out again): one left there
// would keep the cgroup from being removed and spawn later children in it.
func rescueThreads(dir string) {
	h, err := home()
	if err != nil || h.tasks < 0 {
		return
	}
	own, _ := ownThreads(dir)
	for _, tid := range own {
		_, _ = unix.Write(h.tasks, []byte(tid))
	}
}
