package local

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// statTool is the fingerprint of the executable file at p (following
// links): its device, inode, size, modification and change times, which a
// replacement cannot keep (a new file has another inode, a rewritten one
// a new change time); ok is false when p is no executable file.
func statTool(p string) (print string, ok bool) {
	var st unix.Stat_t
	if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
		return "", false
	}
	return fmt.Sprintf("%d:%d:%d:%d.%d:%d.%d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec), true
}
