package cli

import (
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/forge-run/forge/forge"
)

// live is the terminal's progress view: a line per running job with its
// phase and elapsed time, a total bar, and finished jobs' lines above.
type live struct {
	p     *mpb.Progress
	total *mpb.Bar

	mu   sync.Mutex
	jobs map[string]*liveJob
	done bool
}

type liveJob struct {
	bar   *mpb.Bar
	phase atomic.Value // string
}

func newLive(w io.Writer, jobs int) *live {
	// Auto refresh: the caller only builds a live view for a terminal, and
	// tests drive it on a buffer.
	p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(30), mpb.WithAutoRefresh())
	total := p.AddBar(int64(jobs),
		mpb.BarPriority(math.MaxInt), // always the last line
		mpb.PrependDecorators(decor.Name("forge "), decor.CountersNoUnit("%d/%d jobs", decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace)),
	)
	return &live{p: p, total: total, jobs: map[string]*liveJob{}}
}

// event updates the view; line, if any, is printed above it.
func (l *live) event(e forge.Event, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	switch e.Kind {
	case forge.EventStarted:
		l.add(e.Job, e.Job, "starting")
	case forge.EventPhase:
		if j := l.jobs[e.Job]; j != nil {
			j.phase.Store(string(e.Phase))
		}
	case forge.EventRetry:
		if j := l.jobs[e.Job]; j != nil {
			j.phase.Store(fmt.Sprintf("retrying (%d of %d)", e.Attempt, e.Attempts))
		}
	case forge.EventDone:
		l.remove(e.Job)
		l.total.Increment()
	case forge.EventEnvironment:
		// A build has a line of its own, showing its log's last line, and
		// its start and end are printed above the bars.
		key := "\x00env " + e.Job
		switch {
		case e.Line != nil:
			if j := l.jobs[key]; j != nil {
				j.phase.Store(oneLine(*e.Line, 60))
			}
		case e.Built != nil:
			l.remove(key)
		case l.jobs[key] == nil:
			l.add(key, "environment "+e.Job, "building")
		}
	}
	if line != "" {
		fmt.Fprint(l.p, line)
	}
}

// add shows a line for key: name, its phase and the time since it began.
func (l *live) add(key, name, phase string) {
	j := &liveJob{}
	j.phase.Store(phase)
	j.bar = l.p.New(1, mpb.SpinnerStyle(), mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(
			decor.Name(name, decor.WCSyncSpaceR),
			decor.Any(func(decor.Statistics) string { return j.phase.Load().(string) }, decor.WCSyncSpaceR),
		),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace)),
	)
	l.jobs[key] = j
}

// remove ends key's line.
func (l *live) remove(key string) {
	if j := l.jobs[key]; j != nil {
		j.bar.Abort(true)
		delete(l.jobs, key)
	}
}

// print writes a line above the bars.
func (l *live) print(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		fmt.Fprint(l.p, line)
	}
}

// stop ends the view, whatever state the run left it in, and waits until
// it has drawn its last frame.
func (l *live) stop() {
	l.mu.Lock()
	if l.done {
		l.mu.Unlock()
		return
	}
	l.done = true
	for _, j := range l.jobs {
		j.bar.Abort(true)
	}
	if !l.total.Completed() {
		l.total.Abort(false)
	}
	l.mu.Unlock()
	l.p.Wait()
}
