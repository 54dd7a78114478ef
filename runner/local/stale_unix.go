//go:build unix

package local

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ownerGone reports whether name is "forge-<pid>-…" of a forge that is gone.
func ownerGone(name string) bool {
	rest, ok := strings.CutPrefix(name, "forge-")
	owner, _, ok2 := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(owner)
	if !ok || !ok2 || err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
