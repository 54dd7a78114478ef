package cli

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/runner"
)

// progress reports a run on stderr: a plain line per event ("[alpha] done
// 3.2s"), or on a terminal a live view and finished jobs' lines.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	quiet   bool
	verbose bool
	live    *live
	// envs holds the environments being made whose "building" line waits
	// for their first log line: one found ready prints none.
	envMu sync.Mutex
	envs  map[string]string
}

func newProgress(w io.Writer, quiet, verbose bool) *progress {
	return &progress{w: w, quiet: quiet, verbose: verbose, envs: map[string]string{}}
}

// startLive switches to the live view for a run of n jobs.
func (p *progress) startLive(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.quiet {
		p.live = newLive(p.w, n)
	}
}

// stopLive ends the live view, if any; later lines are plain again.
func (p *progress) stopLive() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live != nil {
		p.live.stop()
		p.live = nil
	}
}

// warnings is a writer for the backends' warning lines: whole lines go
// above the live view while it runs (never torn by its redraws), to stderr
// otherwise; --quiet does not silence them.
func (p *progress) warnings() io.Writer { return &warnWriter{p: p} }

type warnWriter struct {
	p   *progress
	mu  sync.Mutex
	buf []byte
}

func (w *warnWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.p.print(text.Inert(string(w.buf[:i+1])))
		w.buf = w.buf[i+1:]
	}
}

// print writes s above the live view while it runs, else plainly.
func (p *progress) print(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live != nil {
		p.live.print(s)
	} else {
		io.WriteString(p.w, s)
	}
}

func (p *progress) printf(format string, args ...any) {
	if !p.quiet {
		p.print(fmt.Sprintf(format, args...))
	}
}

// line renders one event's plain line, or "" for events not shown.
func (p *progress) line(e forge.Event) string {
	switch e.Kind {
	case forge.EventStarted:
		return fmt.Sprintf("[%s] started\n", e.Job)
	case forge.EventPhase:
		if p.verbose {
			return fmt.Sprintf("[%s] %s %s\n", e.Job, e.Phase, seconds(e.Elapsed))
		}
	case forge.EventRetry:
		return fmt.Sprintf("[%s] retrying (attempt %d of %d) after %s: %s\n", e.Job, e.Attempt, e.Attempts,
			e.Result.ErrorKind, oneLine(e.Result.ErrorMessage, 100))
	case forge.EventEnvironment:
		return p.environmentLine(e)
	case forge.EventDone:
		r := e.Result
		switch {
		case r.Success:
			return fmt.Sprintf("[%s] done %s\n", e.Job, seconds(e.Elapsed))
		case r.ErrorKind.Fault() == runner.FaultInterrupted:
			return fmt.Sprintf("[%s] cancelled %s\n", e.Job, seconds(e.Elapsed))
		default:
			return fmt.Sprintf("[%s] failed %s: %s: %s\n", e.Job, seconds(e.Elapsed), r.ErrorKind, oneLine(r.ErrorMessage, 100))
		}
	}
	return ""
}

// environmentLine is the plain line of an environment's build event: its
// start (once it logs a line: a ready one, reused, logs none) and end, and
// with --verbose every line of its log.
func (p *progress) environmentLine(e forge.Event) string {
	name := fmt.Sprintf("[environment %s]", e.Job)
	p.envMu.Lock()
	defer p.envMu.Unlock()
	start, waiting := p.envs[e.Job]
	switch b := e.Built; {
	case e.Line != nil:
		delete(p.envs, e.Job)
		if p.verbose {
			return start + fmt.Sprintf("%s | %s\n", name, text.Inert(*e.Line))
		}
		return start
	case b == nil:
		p.envs[e.Job] = fmt.Sprintf("%s building %s\n", name, runner.ShortHash(e.Env.Hash))
		return ""
	}
	delete(p.envs, e.Job)
	took := seconds(time.Duration(e.Built.BuildSeconds * float64(time.Second)))
	switch {
	case e.Err != nil && waiting:
		return fmt.Sprintf("%s failed to build %s after %s\n", name, runner.ShortHash(e.Env.Hash), took)
	case e.Err != nil:
		return fmt.Sprintf("%s failed after %s\n", name, took)
	case e.Built.Reused:
		return fmt.Sprintf("%s ready: %s, built by an earlier run\n", name, e.Built.Where)
	}
	return fmt.Sprintf("%s built in %s: %s\n", name, took, e.Built.Where)
}

// echo prints one line a candidate printed (--verbose), prefixed by its job.
func (p *progress) echo(job, stream, line string) {
	mark := "|"
	if stream == "stderr" {
		mark = "!"
	}
	p.printf("[%s] %s %s\n", job, mark, text.Inert(line))
}

func (p *progress) header(m *forge.Manifest, plan *forge.Plan, backend string) {
	if sh := plan.Shard; sh != nil {
		p.printf("forge: shard %s: %d of %d jobs\n", sh, sh.Jobs, sh.Of)
	}
	trials := ""
	if plan.Trials > 1 {
		trials = fmt.Sprintf(" × %d trials", plan.Trials)
	}
	if len(plan.Tasks) > 0 {
		tasks := text.Count(len(plan.Tasks), "task", "tasks")
		if s := plan.Sample; s != nil {
			tasks = fmt.Sprintf("%d of %d tasks (--sample %d --seed %d)", s.N, s.Of, s.N, s.Seed)
		}
		p.printf("forge: %s × %s%s on %s, concurrency %d\n",
			text.Count(len(plan.Candidates), "candidate", "candidates"), tasks, trials, backend, plan.Concurrency)
		return
	}
	p.printf("forge: %s%s on %s, concurrency %d: %s\n",
		text.Count(len(plan.Candidates), "candidate", "candidates"), trials, backend, plan.Concurrency, oneLine(m.Objective, 60))
}

func (p *progress) event(e forge.Event) {
	if p.quiet {
		return
	}
	line := p.line(e)
	if p.live != nil {
		if e.Kind == forge.EventStarted || e.Kind == forge.EventPhase {
			line = "" // the view shows them
		}
		p.live.event(e, line)
		return
	}
	if line != "" {
		p.printf("%s", line)
	}
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// oneLine flattens s to one inert line of at most n runes.
func oneLine(s string, n int) string { return text.Shorten(text.OneLine(s), n) }
