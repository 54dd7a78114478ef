package local

// Starting a job's processes inside its PID namespace and v1 pids cgroup,
// and signalling processes found in /proc without hitting a reused pid.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// spawn starts cmd. With a PID namespace or a v1 pids cgroup to start it in,
// it does so from a locked thread that is moved into them (they apply to the
// children of the calling thread) and moved back afterwards; a thread that
// cannot be moved back is never unlocked, so the runtime ends it.
func spawn(cmd *exec.Cmd, nsfd int, v1Dir, v1Home string) error {
	if nsfd < 0 && v1Dir == "" {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		clean, err := spawnLocked(cmd, nsfd, v1Dir, v1Home)
		if clean {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// spawnLocked does spawn's work on the locked thread; clean reports that the
// thread is back in forge's own namespace and cgroup.
func spawnLocked(cmd *exec.Cmd, nsfd int, v1Dir, v1Home string) (clean bool, err error) {
	home := -1
	if nsfd >= 0 {
		if home, err = unix.Open("/proc/thread-self/ns/pid", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			return true, fmt.Errorf("open forge's PID namespace: %w", err)
		}
		defer unix.Close(home)
	}
	tid := []byte(strconv.Itoa(unix.Gettid()))
	clean = true
	if v1Dir != "" {
		if err := os.WriteFile(filepath.Join(v1Dir, "tasks"), tid, 0); err != nil {
			return true, fmt.Errorf("join pids cgroup %s: %w", v1Dir, err)
		}
		defer func() {
			if err := os.WriteFile(filepath.Join(v1Home, "tasks"), tid, 0); err != nil {
				clean = false
			}
			rescueThreads(v1Dir, v1Home)
		}()
	}
	if nsfd >= 0 {
		if err := unix.Setns(nsfd, unix.CLONE_NEWPID); err != nil {
			return clean, fmt.Errorf("enter the job's PID namespace: %w", err)
		}
		defer func() {
			if err := unix.Setns(home, unix.CLONE_NEWPID); err != nil {
				clean = false
			}
		}()
	}
	return clean, cmd.Start()
}

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

// signalIf sends sig to pid when match (if any) holds for it. It holds a
// pidfd across the check so that a pid reused meanwhile is never hit, and
// reports whether the signal was delivered.
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

// rescueThreads moves every thread of forge's own that the v1 cgroup dir
// holds back to home, a safety net: only the locked spawning thread is
// moved in on purpose, and another thread left there would keep the cgroup
// from being removed and have forge's later children born in it. Errors
// leave the thread where it is.
func rescueThreads(dir, home string) {
	own, _ := ownThreads(dir)
	for _, tid := range own {
		_ = os.WriteFile(filepath.Join(home, "tasks"), []byte(tid), 0)
	}
}
