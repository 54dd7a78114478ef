package daytona

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
)

// maxReport bounds what a command's log stream may carry before forge.sh's
// done line: the report's JSON and at most inlineBudget bytes in base64.
const maxReport = 2*inlineBudget + 8<<10

// streamEvent is what a command's log stream tells runInSession, once.
type streamEvent struct {
	// done: the command is over (forge.sh printed its done line, or the
	// stream ended normally, which the toolbox does once the exit code
	// exists).
	done bool
	// exit is the status forge.sh gave in its done line, which is the
	// status it exits with: the command's exit code.
	exit *int
	// report is what forge.sh printed before its done line, when that came
	// whole.
	report []byte
}

// errStreamConnect starts the SDK's message when the stream's WebSocket
// handshake fails (any HTTP answer but 101 gives status 0 and this).
const errStreamConnect = "Failed to connect to log stream"

// followLogs watches a command's log stream (the SDK's WebSocket on
// .../logs?follow=true) for forge.sh's done line, and sends one event. It
// returns when the stream ends: normally once the command's exit code
// exists, or when the connection breaks (the sandbox's deletion breaks it).
// Cancelling ctx does not interrupt the SDK's blocking read; it only stops
// it at the next frame. The stream carries only forge.sh's own output, so
// waiting on it costs nothing while the candidate runs; it goes through
// gorilla/websocket's default dialer, not the toolbox's HTTP client, so no
// HTTP timeout limits how long it stays open (its handshake has 45 s).
func (j *jobRun) followLogs(ctx context.Context, cmdID string, events chan<- streamEvent) {
	// The SDK blocks on these channels: they are drained to the end.
	stdout, stderr := make(chan string, 16), make(chan string, 16)
	errc := make(chan error, 1)
	go func() {
		errc <- j.sb.Process.GetSessionCommandLogsStream(ctx, sessionID, cmdID, stdout, stderr)
	}()
	var scan doneScanner
	sent := false
	for stdout != nil || stderr != nil {
		select {
		case s, ok := <-stdout:
			if !ok {
				stdout = nil
				continue
			}
			if sent {
				continue
			}
			if ev, ok := scan.add(s); ok {
				events <- ev
				sent = true
			}
		case _, ok := <-stderr:
			if !ok {
				stderr = nil
			}
		}
	}
	err := <-errc
	if ctx.Err() != nil {
		return // nobody waits any more; the error is ours
	}
	j.r.streams.note(j.r.opts.Warn, err, sent)
	if !sent {
		events <- streamEvent{done: err == nil}
	}
}

// doneScanner watches what forge.sh prints for its done line, keeping what
// came before it as the report, up to maxReport.
type doneScanner struct {
	buf []byte
	cut bool // more than maxReport came: buf holds only the last line's start
}

// add takes the next chunk; it returns the event once the done line is
// whole.
func (d *doneScanner) add(chunk string) (streamEvent, bool) {
	d.buf = append(d.buf, chunk...)
	if i, exit, ok := findDone(d.buf); ok {
		ev := streamEvent{done: true, exit: exit}
		if !d.cut && i <= maxReport {
			ev.report = d.buf[:i]
		}
		d.buf = nil
		return ev, true
	}
	if len(d.buf) > maxReport {
		// Too much to be forge's report: watch for the done line only,
		// keeping the last line's start if it could be one.
		d.cut = true
		if p := bytes.LastIndexByte(d.buf, '\n'); p >= len(d.buf)-len(doneLine+" 255") {
			d.buf = append([]byte(nil), d.buf[p:]...)
		} else {
			d.buf = []byte{' '} // no line starts here
		}
	}
	return streamEvent{}, false
}

// streamState is what the run learned about command log streams.
type streamState struct {
	mu      sync.Mutex
	worked  bool // a stream delivered
	refused int  // handshakes that failed
	warned  bool
}

// refusedLimit is how many failed handshakes, with none that worked, make
// the run stop trying streams (an old toolbox, a proxy without WebSocket).
const refusedLimit = 3

// wanted says whether to open a stream for the next command.
func (s *streamState) wanted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.worked || s.refused < refusedLimit
}

// note records how a stream ended; the first refused handshake of the run
// is named on Warn, once.
func (s *streamState) note(warn io.Writer, err error, delivered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil || delivered {
		s.worked = true
		return
	}
	if !strings.HasPrefix(messageOf(err), errStreamConnect) {
		return // broke mid-way: the safety poll takes over, nothing to say
	}
	s.refused++
	if !s.warned {
		s.warned = true
		fmt.Fprintf(warn, "daytona: cannot open a command's log stream (%s); noticing finished commands by polling instead\n", describe(err))
	}
}
