//go:build unix

package agenttest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The lock is exclusive while held and free once let go: a non-blocking
// try from another open file says which, with no clock.
func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	try := func() error {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	unlock, err := lockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := try(); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("another lock while the first was held: %v", err)
	}
	unlock()
	if err := try(); err != nil {
		t.Fatalf("no lock once the first was let go: %v", err)
	}
}
