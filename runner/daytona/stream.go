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
	// report is what forge.sh printed before its done line, when that came
	// whole.
	report []byte
	// err is why the stream failed before the command was over.
	err error
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
	var buf []byte
	sent, whole := false, true
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
			buf = append(buf, s...)
			if i := lineIndex(buf, doneLine); i >= 0 {
				ev := streamEvent{done: true}
				if whole && i <= maxReport {
					ev.report = buf[:i]
				}
				events <- ev
				sent, buf = true, nil
				continue
			}
			if len(buf) > maxReport {
				// Too much to be forge's report: watch for the done line
				// only, keeping the last line's start if it could be one.
				whole = false
				if p := bytes.LastIndexByte(buf, '\n'); p >= len(buf)-len(doneLine)-1 {
					buf = append([]byte(nil), buf[p:]...)
				} else {
					buf = []byte{' '} // no line starts here
				}
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
		events <- streamEvent{done: err == nil, err: err}
	}
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
