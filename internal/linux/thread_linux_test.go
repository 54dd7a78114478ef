package linux

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestOnLockedThreadNeverOnTheMainThread: the function OnLockedThread runs
// is never run on the main thread, which the runtime cannot end.
func TestOnLockedThreadNeverOnTheMainThread(t *testing.T) {
	for range 200 {
		var tid int
		if err := OnLockedThread(func() (bool, error) { tid = unix.Gettid(); return true, nil }); err != nil {
			t.Fatal(err)
		}
		if tid == unix.Getpid() {
			t.Fatal("f ran on the main thread")
		}
	}
}
