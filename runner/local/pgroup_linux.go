package local

// The pgroup tier's sweep for processes carrying the job's marker.

import (
	"os"
	"os/exec"
	"slices"
	"syscall"

	"github.com/forge-run/forge/internal/linux"
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

// ours reports whether pid is the job's: its user's, or its environment
// carries the whole marker.
func (t pgroupTier) ours(pid int) bool {
	return t.user != nil && ownedBy(pid, t.user.uid) || len(t.marker) > 0 && linux.EnvironHas(pid, t.marker)
}
