package local

// The pgroup tier's sweep for processes carrying the job's marker.

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/forge-run/forge/internal/linux"
	"golang.org/x/sys/unix"
)

// startPlain starts cmd, seeing the file system as v says.
func startPlain(cmd *exec.Cmd, v view, steps *jobSteps, threads *spawnThreads) error {
	return spawn(cmd, -1, -1, v, steps, threads)
}

// sweep sends sig to every process carrying the job's marker or running as
// its user (with outsideGroups, not those in started's groups) and reports
// how many it found.
func (t pgroupTier) sweep(sig syscall.Signal, started []*os.Process, outsideGroups bool) int {
	if len(t.marker) == 0 && t.user == nil {
		return 0
	}
	inGroups := func(pid int) bool {
		pg, err := syscall.Getpgid(pid)
		return err == nil && slices.ContainsFunc(started, func(p *os.Process) bool { return p.Pid == pg })
	}
	match := func(pid int) bool { return !(outsideGroups && inGroups(pid)) && t.ours(pid) }
	self, n := os.Getpid(), 0
	linux.ForEachPid(func(pid int) {
		// A first look without a pidfd passes over the machine's other
		// processes at the cost of reading their environment; a marked one
		// is looked at again under a pidfd, so a reused pid is never hit.
		if pid != self && t.ours(pid) && linux.SignalIf(pid, sig, match) {
			n++
		}
	})
	return n
}

// ours reports whether pid is the job's: its user's, or marked.
func (t pgroupTier) ours(pid int) bool {
	return t.user != nil && ownedBy(pid, t.user.uid) || t.marked(pid)
}

// marked reports whether pid's environment carries the whole marker.
func (t pgroupTier) marked(pid int) bool {
	if len(t.marker) == 0 {
		return false
	}
	buf := environBuffers.Get().(*[]byte)
	defer environBuffers.Put(buf)
	env, ok := readEnviron(pid, buf)
	if !ok {
		return false
	}
	have := make([]bool, len(t.marker))
	n := 0
	for entry := range bytes.SplitSeq(env, []byte{0}) {
		if i := slices.Index(t.marker, string(entry)); i >= 0 && !have[i] {
			have[i] = true
			n++
		}
	}
	return n == len(t.marker)
}

// readEnviron reads /proc/PID/environ into *buf with plain system calls: the
// sweep reads every process's at the end of each job.
func readEnviron(pid int, buf *[]byte) ([]byte, bool) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/environ", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err != nil {
			return nil, false
		}
		if n == 0 {
			*buf = b
			return b, true
		}
		b = b[:len(b)+n]
	}
}

// environBuffers are readEnviron's buffers, reused across sweeps.
var environBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}
