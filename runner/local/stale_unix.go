//go:build unix

package local

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ownerGone reports whether name is "forge-<pid>-…" for a forge process
// (not this one) that no longer exists: what a forge killed before it could
// clean up (SIGKILL, a second Ctrl-C) leaves behind.
func ownerGone(name string) bool {
	rest, ok := strings.CutPrefix(name, "forge-")
	owner, _, ok2 := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(owner)
	if !ok || !ok2 || err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
