package local

import (
	"context"
	"time"

	"github.com/forge-run/forge/runner"
)

// shellSteps are lines run in turn with /bin/sh -c, in one box and timeout:
// each as proc says (but its path and argv), proc.timeout bounding all the
// lines together.
type shellSteps struct {
	lines []string
	proc  process
	// starting, when set, is called before line i starts.
	starting func(i int, line string)
}

// runSteps runs s.lines in b until one fails and returns its index (-1 when
// all exited 0), what was observed of it and err when it could not start.
// Processes a line leaves running stay in b.
func (r *Runner) runSteps(ctx context.Context, b *box, s shellSteps) (failed int, f finished, err error) {
	deadline := time.Now().Add(s.proc.timeout)
	for i, line := range s.lines {
		if ctx.Err() != nil {
			return i, finished{stdout: &runner.CappedBuffer{}, stderr: &runner.CappedBuffer{}, cancelled: true}, nil
		}
		if s.starting != nil {
			s.starting(i, line)
		}
		p := s.proc
		p.path, p.argv = "/bin/sh", []string{"sh", "-c", line}
		p.timeout = max(time.Until(deadline), time.Millisecond)
		f, err := r.runProcess(ctx, b, p)
		if err != nil || f.cancelled || f.timedOut || f.exitCode == nil || *f.exitCode != 0 {
			return i, f, err
		}
	}
	return -1, finished{}, nil
}
