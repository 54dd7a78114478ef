package daytona

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	toolbox "github.com/daytonaio/daytona/libs/toolbox-api-client-go"

	"github.com/forge-run/forge/runner"
)

// sessionID is the toolbox session a job's commands run in.
const sessionID = "forge"

// setup runs the setup lines with their own timeout. failed reports that
// they failed (the Result already says how).
func (j *jobRun) setup(ctx context.Context) (failed bool, err error) {
	timeout := j.setupTimeout()
	run, err := j.runInSession(ctx, "sh "+shQuote(j.lay.controlScript())+" setup", timeout)
	if err != nil {
		return false, err
	}
	exit := run.exit
	if !run.timedOut && exit != nil && *exit == 0 {
		return false, nil
	}
	// Show what setup printed.
	meta, files, cerr := j.collect(ctx, nil, "setup")
	if cerr == nil && meta.Setup > 0 {
		buf := &runner.CappedBuffer{Max: j.job.Limits.OutputCap()}
		buf.Write(files["setup"])
		j.res.Stderr = buf.String()
		j.res.OutputTruncated = meta.Setup > j.job.Limits.OutputCap()
	}
	j.res.SetupFailed(runner.Outcome{ExitCode: exit, TimedOut: run.timedOut}, timeout,
		"", failingSetupOutput(j.res.Stderr, j.job.Setup))
	return true, nil
}

// failingSetupOutput is what the failing setup line printed: the setup log
// (its lines' stdout and stderr together) after the "+ line" trace
// setupScriptText writes before each line runs, found in order; the failing
// line's is the last there. The whole log when no trace is in it (cut off
// by the cap).
func failingSetupOutput(log string, lines []string) string {
	at := -1
	for _, line := range lines {
		trace := "+ " + line + "\n"
		i := strings.Index(log[max(at, 0):], trace)
		if i < 0 {
			break
		}
		at = max(at, 0) + i + len(trace)
	}
	if at < 0 {
		return log
	}
	return log[at:]
}

// Polling schedules of runInSession.
const (
	// firstPoll starts the polling of a command whose log stream is not
	// open; polls then slow down by a quarter each, to PollInterval.
	firstPoll = 50 * time.Millisecond
	// settlePoll starts the polling for the exit code of a command that
	// said it is over; polls then double, to PollInterval.
	settlePoll = 10 * time.Millisecond
	// settleGrace is how long past its timeout a command that said it is
	// over (before its timeout) may take to show its exit code.
	settleGrace = 10 * time.Second
)

// sessionRun is how a session command ended.
type sessionRun struct {
	// exit is its exit code; nil when it timed out.
	exit     *int
	timedOut bool
	// report is what forge.sh printed after the command, when its log
	// stream delivered it whole.
	report []byte
}

// runInSession starts command asynchronously in the job's session and
// returns when it has ended, the timeout passed (then the session, and with
// it the command's process tree, is killed) or ctx ended.
//
// It learns that the command ended from the command's log stream: forge.sh
// prints its report and a done line with its exit status when it is over,
// which the stream delivers at once (the toolbox itself closes the stream
// only after a second of silence at the earliest). That status is the
// command's exit code: forge.sh exits with it. Only when the stream ends
// without it is the exit code read with GetSessionCommand (polled from
// 10 ms, as the toolbox records it a moment after the command ends). A
// slow safety poll (PollInterval) runs alongside, so a stream that dies
// silently costs at most that; a stream that cannot be opened or breaks
// turns into fast polling (from 50 ms, slowing down to PollInterval).
// No HTTP call lasts longer
// than a poll and the stream is not an HTTP call, so the SDK's 60 s HTTP
// timeout never matters.
func (j *jobRun) runInSession(ctx context.Context, command string, timeout time.Duration) (sessionRun, error) {
	var run sessionRun
	if err := j.ensureSession(ctx); err != nil {
		return run, err
	}
	cmdID, err := j.start(ctx, command)
	if err != nil {
		return run, err
	}
	limit := time.Now().Add(timeout)
	var events chan streamEvent
	if j.r.streams.wanted() {
		events = make(chan streamEvent, 1)
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		j.streams.Add(1)
		go func() {
			defer j.streams.Done()
			j.followLogs(sctx, cmdID, events)
		}()
	}
	interval, grow := firstPoll, func(d time.Duration) time.Duration { return d * 5 / 4 }
	failures := 0
	for {
		wait := interval
		if events != nil {
			wait = j.r.opts.PollInterval // the safety poll
		}
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-time.After(max(0, min(wait, time.Until(limit)))):
		case ev := <-events:
			events = nil
			if ev.done && ev.exit != nil {
				// forge.sh said how it ends: the toolbox will record the same
				// exit code a moment later; waiting for it costs a round trip.
				run.exit, run.report = ev.exit, ev.report
				return run, nil
			}
			if ev.done {
				run.report = ev.report
				if grace := time.Now().Add(settleGrace); grace.After(limit) {
					limit = grace
				}
				interval, grow = settlePoll, func(d time.Duration) time.Duration { return 2 * d }
			}
		}
		if !time.Now().Before(limit) {
			j.killSession(ctx)
			run.report = nil
			run.timedOut = true
			return run, nil
		}
		st, err := j.sb.Process.GetSessionCommand(ctx, sessionID, cmdID)
		if err != nil {
			f := classify(ctx, err)
			if (f.class == classTransient || f.class == classRateLimited) && failures < j.r.opts.Retry.Tries {
				failures++
				interval = max(interval, f.retryAfter)
				continue
			}
			return run, j.classified("poll the command", ctx, err)
		}
		failures = 0
		if code, ok := st["exitCode"]; ok {
			// The SDK puts the toolbox's int32 there.
			n, ok := code.(int32)
			if !ok {
				return run, fmt.Errorf("the toolbox gave exit code %v (%T)", code, code)
			}
			run.exit = new(int(n))
			return run, nil
		}
		if events == nil {
			interval = min(grow(interval), j.r.opts.PollInterval)
		}
	}
}

// errNoCommandID is a start the toolbox answered without a command id.
var errNoCommandID = errors.New("the toolbox gave no command id")

// start sends command to the job's session and returns the id of the
// command that runs it. Sending it again is safe: forge.sh runs its work at
// most once per sandbox however often it is started (claimText), and a
// later start reports what the first did. So a start has the ordinary
// retry budget; and after a failure that may have reached the toolbox (a
// 5xx, a timeout, a connection dropped after the request left), the
// session's commands are looked at before it is sent again: a start that
// got there after all is followed, not repeated.
func (j *jobRun) start(ctx context.Context, command string) (string, error) {
	maybeStarted := false
	id, err := retried(ctx, &j.r.opts, "start command in "+j.name, j.r.opts.calls(), func(ctx context.Context) (string, error) {
		if maybeStarted {
			if id := j.startedAlready(ctx, command); id != "" {
				return id, nil
			}
		}
		resp, err := j.sb.Process.ExecuteSessionCommand(ctx, sessionID, command, true, false)
		if err != nil {
			if classify(ctx, err).class == classTransient && !neverSent(err) {
				maybeStarted = true
			}
			return "", err
		}
		id, _ := resp["id"].(string)
		if id == "" {
			return "", backoff.Permanent(errNoCommandID)
		}
		return id, nil
	})
	switch {
	case errors.Is(err, errNoCommandID):
		return "", err
	case err != nil:
		return "", j.classified("start the command", ctx, err)
	}
	return id, nil
}

// startedAlready is the id of a command of the job's session that is
// command (sent by an earlier start whose answer was lost); "" when there
// is none, or the session cannot be read (starting it again is safe all
// the same).
func (j *jobRun) startedAlready(ctx context.Context, command string) string {
	s, err := retried(ctx, &j.r.opts, "look for the command in "+j.name, j.r.opts.calls(), func(ctx context.Context) (map[string]any, error) {
		return j.sb.Process.GetSession(ctx, sessionID)
	})
	if err != nil {
		return ""
	}
	cmds, _ := s["commands"].([]toolbox.Command)
	for _, c := range cmds {
		if c.GetCommand() == command && c.GetId() != "" {
			return c.GetId()
		}
	}
	return ""
}

// ensureSession creates the job's toolbox session unless it exists.
func (j *jobRun) ensureSession(ctx context.Context) error {
	if j.session {
		return nil
	}
	err := j.r.opts.retry(ctx, "create session in "+j.name, j.r.opts.calls(), func(ctx context.Context) error {
		err := j.sb.Process.CreateSession(ctx, sessionID)
		if statusOf(err) == 409 { // created by an attempt whose answer was lost
			return nil
		}
		return err
	})
	if err != nil {
		return j.classified("create a session", ctx, err)
	}
	j.session = true
	return nil
}

// killSession deletes the job's session: the toolbox kills its process
// tree. It runs on ctx's values without its cancellation (the job's own
// may be ending), with its own deadline.
func (j *jobRun) killSession(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := j.r.opts.retry(ctx, "kill the session in "+j.name, j.r.opts.calls(), func(ctx context.Context) error {
		return j.sb.Process.DeleteSession(ctx, sessionID)
	})
	if err != nil && statusOf(err) != 404 {
		fmt.Fprintf(j.r.opts.Warn, "daytona: could not kill the timed-out command in %s: %s (the sandbox is deleted next)\n", j.name, describe(err))
	}
	j.session = false
}
