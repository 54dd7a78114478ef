package local

import (
	"context"
	"time"

	"github.com/forge-run/forge/runner"
)

// shellSteps are lines run in turn with /bin/sh -c, in one box and timeout.
type shellSteps struct {
	lines []string
	dir   string
	env   []string
	user  *jobUser
	// timeout bounds all the lines together.
	timeout time.Duration
	// maxBytes caps what is kept of each line's stdout and stderr.
	maxBytes int64
	// echo gets the output line by line: maxBytes of it, all with echoAll.
	echo    func(stream, line string)
	echoAll bool
	// starting, when set, is called before line i starts.
	starting func(i int, line string)
}

// runSteps runs s.lines in b until one fails and returns its index (-1 when
// all exited 0), what was observed of it and err when it could not start.
// Processes a line leaves running stay in b.
func (r *Runner) runSteps(ctx context.Context, b box, s shellSteps) (failed int, f finished, err error) {
	deadline := time.Now().Add(s.timeout)
	for i, line := range s.lines {
		if ctx.Err() != nil {
			return i, finished{stdout: &runner.CappedBuffer{}, stderr: &runner.CappedBuffer{}, cancelled: true}, nil
		}
		if s.starting != nil {
			s.starting(i, line)
		}
		f, err := r.runProcess(ctx, b, process{
			path: "/bin/sh", argv: []string{"sh", "-c", line}, dir: s.dir, env: s.env, user: s.user,
			timeout:  max(time.Until(deadline), time.Millisecond),
			maxBytes: s.maxBytes,
			echo:     s.echo, echoAll: s.echoAll,
		})
		if err != nil || f.cancelled || f.timedOut || f.exitCode == nil || *f.exitCode != 0 {
			return i, f, err
		}
	}
	return -1, finished{}, nil
}
