package cli

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestGCPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live uint64
		want int
	}{
		{1 * mb, 1600}, // a small heap grows by the floor
		{4 * mb, 400},
		{32 * mb, 50},
		{64 * mb, 25}, // a quarter is the floor
		{400 * mb, 25},
	} {
		if got := gcPercent(c.live, 16*mb); got != c.want {
			t.Errorf("gcPercent(%d MB, 16 MB) = %d, want %d", c.live/mb, got, c.want)
		}
	}
}

// The pacer sets the percent after each collection from what it left live:
// a heap far above the floor grows by a quarter, a small one by the floor;
// stopping it puts back the percent it found.
func TestPacerFollowsTheLiveHeap(t *testing.T) {
	was := debug.SetGCPercent(100)
	defer debug.SetGCPercent(was)
	held := make([]byte, 128<<20)
	for i := range held {
		held[i] = 1
	}
	paced := make(chan int, 1)
	p := newPacer(8<<20, func(percent int) {
		select { // the runtime's cleanups wait for no test
		case paced <- percent:
		default:
		}
	})
	// A pace after each collection: one the runtime started between the
	// test's (another test's garbage) is dropped before the next.
	collect := func() int {
		t.Helper()
		select {
		case <-paced:
		default:
		}
		runtime.GC()
		select {
		case percent := <-paced:
			return percent
		case <-time.After(time.Minute):
			t.Fatal("no pace after a collection")
			return 0
		}
	}
	if got := collect(); got != gcLeast {
		t.Errorf("percent over 128 MB live = %d, want %d", got, gcLeast)
	}
	runtime.KeepAlive(held)
	held = nil
	if got := collect(); got <= 100 {
		t.Errorf("percent once the heap is small = %d, want above 100 (it may grow by 8 MB)", got)
	}
	p.stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("percent after stop = %d, want the 100 it found", got)
	}
	select { // a pace that ran before stop
	case <-paced:
	default:
	}
	p.pace() // the cleanup still armed, run as a collection would
	select {
	case percent := <-paced:
		t.Errorf("paced %d after stop", percent)
	default:
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("percent after a pace past stop = %d, want 100", got)
	}
}
