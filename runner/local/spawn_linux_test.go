package local

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestSpawnThreadsAreKeptUntilAwayFromHome: a kept thread serves one call
// after another, never on the main thread; a call that leaves it away from
// home ends it, and the next call gets another.
func TestSpawnThreadsAreKeptUntilAwayFromHome(t *testing.T) {
	p := newSpawnThreads()
	defer p.close()
	tid := func(home bool) (int, bool) {
		t.Helper()
		var id int
		var kept bool
		if err := p.run(func(k bool) (bool, error) { id, kept = unix.Gettid(), k; return home, nil }); err != nil {
			t.Fatal(err)
		}
		if id == unix.Getpid() {
			t.Fatal("a call ran on the main thread")
		}
		return id, kept
	}
	first, kept := tid(true)
	if !kept {
		t.Skip("no thread can have a file system context of its own here")
	}
	if again, _ := tid(false); again != first {
		t.Errorf("the second call ran on thread %d, not the kept %d", again, first)
	}
	if next, _ := tid(true); next == first {
		t.Errorf("thread %d, left away from home, served another call", first)
	}
}
