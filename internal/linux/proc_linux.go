package linux

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ForEachPid calls f for every process in /proc.
func ForEachPid(f func(pid int)) {
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

// SignalIf sends sig to pid when match (if any) holds, holding a pidfd
// across the check so a reused pid is never hit; it reports whether the
// signal was delivered.
func SignalIf(pid int, sig syscall.Signal, match func(int) bool) bool {
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

// Namespace names a namespace, to recognise it by, even once every
// process of it has ended.
type Namespace struct{ Dev, Ino uint64 }

// NamespaceOf is the namespace fd (a /proc/PID/ns/ file, open) stands for.
func NamespaceOf(fd int) (Namespace, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Namespace{}, err
	}
	return Namespace{st.Dev, st.Ino}, nil
}

// HoldsPid reports whether pid lives in the PID namespace ns.
func (ns Namespace) HoldsPid(pid int) bool {
	var st unix.Stat_t
	if unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/pid", &st) != nil {
		return false
	}
	return st.Dev == ns.Dev && st.Ino == ns.Ino
}

// EachPid calls f with this machine's pid of every process of the PID
// namespace ns.
func (ns Namespace) EachPid(f func(pid int)) {
	ForEachPid(func(pid int) {
		if ns.HoldsPid(pid) {
			f(pid)
		}
	})
}

// NSPid is the pid the process pid (this machine's) has in its own PID
// namespace; 0 if it is gone.
func NSPid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.Atoi(f[len(f)-1])
				return n
			}
		}
	}
	return 0
}
