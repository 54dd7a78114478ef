package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/runner"
)

// progress prints one plain line per event on stderr, as the original
// tool's log callback did: "[alpha] started", "[alpha] done 3.2s".
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	quiet   bool
	verbose bool
}

func newProgress(w io.Writer, quiet, verbose bool) *progress {
	return &progress{w: w, quiet: quiet, verbose: verbose}
}

func (p *progress) printf(format string, args ...any) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

func (p *progress) header(m *forge.Manifest, plan *forge.Plan, backend string) {
	trials := ""
	if plan.Trials > 1 {
		trials = fmt.Sprintf(" × %d trials", plan.Trials)
	}
	p.printf("forge: %d candidates%s on %s, concurrency %d: %s\n",
		len(plan.Candidates), trials, backend, plan.Concurrency, oneLine(m.Objective, 60))
}

func (p *progress) footer(dir string) {
	p.printf("forge: results in %s\n", dir)
}

func (p *progress) event(e forge.Event) {
	switch e.Kind {
	case forge.EventStarted:
		p.printf("[%s] started\n", e.Job)
	case forge.EventPhase:
		if p.verbose {
			p.printf("[%s] %s %s\n", e.Job, e.Phase, seconds(e.Elapsed))
		}
	case forge.EventDone:
		r := e.Result
		switch {
		case r.Success:
			p.printf("[%s] done %s\n", e.Job, seconds(e.Elapsed))
		case r.ErrorKind == runner.ErrCancelled:
			p.printf("[%s] cancelled %s\n", e.Job, seconds(e.Elapsed))
		default:
			p.printf("[%s] failed %s: %s: %s\n", e.Job, seconds(e.Elapsed), r.ErrorKind, oneLine(r.ErrorMessage, 100))
		}
	}
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// oneLine flattens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
