package local

// The pgroup tier's sweep: processes found by the job's marker in their
// environment.

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// sweep sends sig to every process whose environment carries the job's
// marker, except, with outsideGroups, those in the groups of started (they
// got it already), and reports how many it found.
func (t pgroupTier) sweep(sig syscall.Signal, started []*os.Process, outsideGroups bool) int {
	if len(t.marker) == 0 {
		return 0
	}
	inGroups := func(pid int) bool {
		pg, err := syscall.Getpgid(pid)
		return err == nil && slices.ContainsFunc(started, func(p *os.Process) bool { return p.Pid == pg })
	}
	match := func(pid int) bool { return !(outsideGroups && inGroups(pid)) && t.marked(pid) }
	self, n := os.Getpid(), 0
	forEachPid(func(pid int) {
		if pid != self && signalIf(pid, sig, match) {
			n++
		}
	})
	return n
}

// marked reports whether pid's environment carries every entry of the
// job's marker.
func (t pgroupTier) marked(pid int) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	have := strings.Split(string(env), "\x00")
	for _, m := range t.marker {
		if !slices.Contains(have, m) {
			return false
		}
	}
	return true
}
