package daytona

// A job's commands: forge.sh in the job's toolbox session, followed over
// the command's log stream.

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

const (
	sessionID      = "forge"          // the toolbox session a job's commands run in
	collectTimeout = 30 * time.Second // bounds "forge.sh collect"
	// firstPoll starts the polling of a command whose log stream could not
	// be followed; polls then slow down by a quarter each, to PollInterval.
	firstPoll = 50 * time.Millisecond
)

// setup runs the setup lines with their own timeout; when they fail, the
// Result says how.
func (j *jobRun) setup(ctx context.Context) error {
	timeout := j.setupTimeout()
	run, err := j.runInSession(ctx, "setup", timeout)
	if err != nil {
		return err
	}
	if !run.timedOut && run.exit != nil && *run.exit == 0 {
		return nil
	}
	if rep, err := j.report(ctx, run, "setup"); err == nil && rep.size("setup") > 0 {
		j.res.Stderr = string(rep.files["setup"]) // capped (outputs.capOf)
		j.res.OutputTruncated = rep.size("setup") > j.out.outCap
	}
	j.res.SetupFailed(runner.Outcome{ExitCode: run.exit, TimedOut: run.timedOut}, timeout,
		"", failingSetupOutput(j.res.Stderr, j.job.Setup))
	return runner.ErrEnded
}

// failingSetupOutput is what the failing setup line printed: the log after
// the last "+ line" trace setupText writes; the whole log without one.
func failingSetupOutput(log string, lines []string) string {
	at := 0
	for _, line := range lines {
		trace := "+ " + line + "\n"
		i := strings.Index(log[at:], trace)
		if i < 0 {
			break
		}
		at += i + len(trace)
	}
	return log[at:]
}

// sessionRun is how a session command ended.
type sessionRun struct {
	exit     *int // nil when it timed out
	timedOut bool
	report   []byte // what forge.sh printed before its done line, if any
	// early is what a job with a verifier printed before it was killed at
	// its timeout: the tools as the candidate started.
	early []byte
}

// report is forge.sh's report of the outputs keys: the one run printed,
// else (killed at its timeout, or none printed) that of "collect".
func (j *jobRun) report(ctx context.Context, run sessionRun, keys ...string) (report, error) {
	text := run.report
	if text == nil {
		c, err := j.runInSession(ctx, "collect "+strings.Join(keys, " "), collectTimeout)
		switch {
		case err != nil:
			return report{}, err
		case c.timedOut:
			return report{}, errors.New("measure the outputs: timed out")
		}
		text = c.report
	}
	rep, err := parseReport(text, j.out.capOf)
	if err != nil {
		return report{}, fmt.Errorf("read forge.sh's report: %w", err)
	}
	return rep, nil
}

// runInSession runs forge.sh in mode as a session command until it ends,
// its timeout passes (the session and its processes are then killed) or
// ctx ends. The log stream brings the report and done line as forge.sh
// prints them (the toolbox closes it only after a second of silence);
// only where it cannot open, breaks or stalls to the timeout is the
// command polled. The stream is no HTTP call: the SDK's 60 s timeout never
// matters.
func (j *jobRun) runInSession(ctx context.Context, mode string, timeout time.Duration) (sessionRun, error) {
	if err := j.ensureSession(ctx); err != nil {
		return sessionRun{}, err
	}
	cmdID, err := j.start(ctx, "sh -c "+shQuote(j.script)+" forge "+mode)
	if err != nil {
		return sessionRun{}, err
	}
	limit := time.Now().Add(timeout)
	ended := make(chan sessionRun, 1)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	j.streams.Go(func() { j.followLogs(sctx, cmdID, ended) })
	var run sessionRun
	select {
	case <-ctx.Done():
		return sessionRun{}, ctx.Err()
	case run = <-ended:
	case <-time.After(timeout):
	}
	if run.exit == nil { // no done line on the stream: poll
		if run, err = j.poll(ctx, cmdID, limit); err != nil {
			return sessionRun{}, err
		}
	}
	if err := scriptFailure(run.report); err != nil {
		return sessionRun{}, err
	}
	return run, nil
}

// followLogs follows a command's log stream (a WebSocket) and sends on
// ended, once, what forge.sh reported at its done line; exit nil when the
// stream ended without one. It returns when the stream ends, at the exit
// code or the sandbox's deletion (ctx stops the SDK only at a frame).
func (j *jobRun) followLogs(ctx context.Context, cmdID string, ended chan<- sessionRun) {
	// The SDK blocks on these channels: they are drained to the end.
	stdout, stderr := make(chan string, 16), make(chan string, 16)
	errc := make(chan error, 1)
	go func() {
		errc <- j.sb.Process.GetSessionCommandLogsStream(ctx, sessionID, cmdID, stdout, stderr)
	}()
	go func() {
		for range stderr {
		}
	}()
	var scan doneScanner
	sent := false
	for s := range stdout {
		if sent {
			continue
		}
		if text, exit, ok := scan.add(s); ok {
			ended <- sessionRun{exit: &exit, report: text}
			sent = true
		} else if len(scan.buf) > j.out.maxReport() {
			ended <- sessionRun{} // more than a report can be: poll instead
			sent = true
		}
	}
	err := <-errc
	if sent {
		return
	}
	// The SDK's message, with status 0, when the handshake gets any answer but 101.
	if err != nil && ctx.Err() == nil && strings.HasPrefix(messageOf(err), "Failed to connect to log stream") {
		j.r.streamRefused.Do(func() {
			fmt.Fprintf(j.r.opts.Warn, "daytona: cannot open a command's log stream (%s); noticing finished commands by polling instead\n", describe(err))
		})
	}
	ended <- sessionRun{}
}

// poll reads the command's state until it has an exit code, then its log
// for forge.sh's report; past limit it kills the session: timed out.
func (j *jobRun) poll(ctx context.Context, cmdID string, limit time.Time) (sessionRun, error) {
	for interval := firstPoll; ; interval = min(interval*5/4, j.r.opts.PollInterval) {
		st, err := retried(ctx, &j.r.opts, "poll the command in "+j.name, j.r.opts.calls(), func(ctx context.Context) (map[string]any, error) {
			return j.sb.Process.GetSessionCommand(ctx, sessionID, cmdID)
		})
		if err != nil {
			return sessionRun{}, j.r.callError(ctx, "poll the command", err)
		}
		if code, ok := st["exitCode"]; ok {
			// The SDK puts the toolbox's int32 there.
			n, ok := code.(int32)
			if !ok {
				return sessionRun{}, fmt.Errorf("the toolbox gave exit code %v (%T)", code, code)
			}
			out, err := j.commandLog(ctx, cmdID)
			if err != nil {
				return sessionRun{}, j.r.callError(ctx, "read the command's log", err)
			}
			report, _, _ := new(doneScanner).add(out) // nil without a done line
			return sessionRun{exit: new(int(n)), report: report}, nil
		}
		if !time.Now().Before(limit) {
			run := sessionRun{timedOut: true}
			if j.job.Verify != nil {
				if out, err := j.commandLog(ctx, cmdID); err == nil {
					run.early = []byte(out)
				}
			}
			j.killSession(ctx)
			return run, nil
		}
		if err := sleep(ctx, min(interval, time.Until(limit))); err != nil {
			return sessionRun{}, err
		}
	}
}

// commandLog is what the command printed so far on its stdout.
func (j *jobRun) commandLog(ctx context.Context, cmdID string) (string, error) {
	logs, err := retried(ctx, &j.r.opts, "read the command's log in "+j.name, j.r.opts.calls(), func(ctx context.Context) (*toolbox.SessionCommandLogsResponse, error) {
		return j.sb.Process.GetSessionCommandLogs(ctx, sessionID, cmdID)
	})
	if err != nil {
		return "", err
	}
	return logs.GetStdout(), nil
}

var errNoCommandID = errors.New("the toolbox gave no command id")

// start sends command to the job's session and returns its id. Sending it
// again is safe (claimText), but after a failure that may have reached the
// toolbox a start that got there is followed, not repeated.
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
		return "", j.r.callError(ctx, "start the command", err)
	}
	return id, nil
}

// startedAlready is the id of an earlier start of command whose answer was
// lost; "" when there is none or the session cannot be read.
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
		return j.r.callError(ctx, "create a session", err)
	}
	j.session = true
	return nil
}

// killSession deletes the job's session, whose processes the toolbox
// kills. A cancelled job stops trying: its sandbox is deleted next, which
// ends them too.
func (j *jobRun) killSession(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := j.r.opts.retry(ctx, "kill the session in "+j.name, j.r.opts.calls(), func(ctx context.Context) error {
		return j.sb.Process.DeleteSession(ctx, sessionID)
	})
	if err != nil && statusOf(err) != 404 && classify(ctx, err).class != classCancelled {
		fmt.Fprintf(j.r.opts.Warn, "daytona: could not kill the timed-out command in %s: %s (the sandbox is deleted next)\n", j.name, describe(err))
	}
	j.session = false
}
