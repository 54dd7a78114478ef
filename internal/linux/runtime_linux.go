package linux

// Keeping the Go runtime from spending a job's wall time on itself: waiting
// for a child in the poller, and a monitor thread that need not wake every
// 20 µs.

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// AwaitExit returns once the child pid has exited, leaving it to be waited
// for (reaped) by its owner, such as exec.Cmd.Wait, which then returns at
// once. It waits in the runtime's poller on a pidfd: a goroutine blocked in
// wait holds its P in a system call for as long as the child runs, and the
// runtime's monitor thread polls every 20 µs to take such Ps back. Without
// pidfds it returns at once, and the owner's wait blocks as before.
func AwaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
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
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		return err != nil || info.Signo != 0 // exited, or nothing to wait for
	})
}

// monitorSlack is the timer slack EaseMonitor gives the monitor thread.
const monitorSlack = "1000000" // ns

// EaseMonitor gives the Go runtime's monitor thread (sysmon) a timer slack
// of 1 ms, where this process may set another thread's (CAP_SYS_NICE). While
// any goroutine runs, sysmon sleeps 20 µs at a time for its first 50 rounds,
// and a process that starts many short jobs keeps it there: a tenth of
// forge's own CPU time on 300 trivial jobs. With the slack its rounds are
// 1 ms apart; what it does in them (taking a P back from a system call,
// preempting a goroutine after 10 ms) is then up to 1 ms later. Only that
// thread's slack changes: every other thread's, which the processes it
// starts inherit, stays as it was.
//
// sysmon is the thread the runtime makes first, before any package is
// initialised: the lowest thread id after the main thread's. Where ids
// have wrapped around (one is below the main thread's), nothing is done.
func EaseMonitor() {
	self, err := os.Readlink("/proc/self") // this process's id as /proc numbers it
	if err != nil {
		return
	}
	leader, err := strconv.Atoi(self)
	if err != nil {
		return
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	first := 0
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		switch {
		case err != nil || tid == leader:
		case tid < leader:
			return
		case first == 0 || tid < first:
			first = tid
		}
	}
	if first != 0 {
		_ = os.WriteFile("/proc/"+strconv.Itoa(first)+"/timerslack_ns", []byte(monitorSlack), 0)
	}
}
