//go:build !linux

package local

import (
	"fmt"
	"os"
)

// statTool is the fingerprint of the executable file at p (following
// links): its size and modification time (the inode and change time are
// Linux's here); ok is false when p is no executable file.
func statTool(p string) (print string, ok bool) {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", false
	}
	return fmt.Sprintf("%d:%d", fi.Size(), fi.ModTime().UnixNano()), true
}
