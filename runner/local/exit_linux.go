package local

import (
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit returns once p (a child not yet waited for) has exited, having
// waited in the runtime's poller on a pidfd rather than in a blocking
// waitid: a thread blocked for the whole life of each job's process makes
// the runtime hand its P to another thread and keeps its sysmon polling
// every 20 µs, which cost forge more CPU than the rest of its work on a run
// of short jobs. p is left to be reaped by its Wait, which then returns at
// once. Where pidfds cannot be polled, awaitExit returns at once.
func awaitExit(p *os.Process) {
	fd, err := unix.PidfdOpen(p.Pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		// No WNOHANG: on a PIDFD_NONBLOCK pidfd the kernel adds it, and
		// says EAGAIN while p runs; given by the caller, waitid would
		// return 0 at once instead.
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT, nil)
		return err != unix.EAGAIN
	})
}
