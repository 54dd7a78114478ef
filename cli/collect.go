package cli

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The garbage collector's pace during a run or a viewer's life: a heap
// mostly long-lived (the manifest, the plan, the record; a viewer's
// indexes) is collected when it has grown by a quarter rather than
// doubled, which keeps a 100,000-trial run's peak at about 225 MB rather
// than 310 MB (docs/command-line.md). A quarter of a small heap is little,
// though: a 300-job run's heap of 3 MB was collected 43 times, each
// collection waking threads beside the jobs. So the heap may always grow
// by gcFloor before it is collected.

// gcFloor is the least the heap grows by between collections.
const gcFloor = 16 << 20

// gcLeast is the collector's percent (GOGC) on a heap above 4 × gcFloor.
const gcLeast = 25

// collectSooner paces the collector as above until the function it
// returns is called, unless GOGC is set in the environment.
func collectSooner(getenv func(string) string) (restore func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	return newPacer(gcFloor, nil).stop
}

// gcPacer sets the collector's percent after each collection from the heap
// it left live: a run's heap grows as its jobs finish.
type gcPacer struct {
	floor   uint64
	paced   func(percent int) // after each setting; for tests
	mu      sync.Mutex
	was     int
	stopped bool
	sample  []metrics.Sample
}

func newPacer(floor uint64, paced func(int)) *gcPacer {
	p := &gcPacer{floor: floor, paced: paced, sample: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/globals:bytes"}, {Name: "/gc/scan/stack:bytes"}}}
	p.was = debug.SetGCPercent(gcPercent(p.live(), floor))
	p.arm()
	return p
}

// arm has pace called once the next collection has ended: a cleanup of
// an object nothing holds runs after the collection that found it so.
func (p *gcPacer) arm() {
	runtime.AddCleanup(new([64]byte), func(p *gcPacer) { p.pace() }, p)
}

func (p *gcPacer) pace() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	percent := gcPercent(p.live(), p.floor)
	debug.SetGCPercent(percent)
	if p.paced != nil {
		p.paced(percent)
	}
	p.arm()
}

// heapMinimum is what the collector's percent applies to before its first
// collection: the runtime's least heap goal, at GOGC=100.
const heapMinimum = 4 << 20

// live is what the collector's percent applies to, in bytes: the heap the
// last collection left live, and the globals and stacks it scans; under mu.
func (p *gcPacer) live() uint64 {
	metrics.Read(p.sample)
	var n [3]uint64
	for i, s := range p.sample {
		if s.Value.Kind() == metrics.KindUint64 {
			n[i] = s.Value.Uint64()
		}
	}
	if n[0] == 0 { // no collection yet
		return heapMinimum
	}
	return n[0] + n[1] + n[2]
}

func (p *gcPacer) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		p.stopped = true
		debug.SetGCPercent(p.was)
	}
}

// gcPercent is the percent that lets a heap whose percent applies to live
// bytes grow by a quarter of them, or by floor when that is more.
func gcPercent(live, floor uint64) int {
	if live == 0 || live*gcLeast/100 >= floor {
		return gcLeast
	}
	return int(min(floor*100/live, 100_000))
}
