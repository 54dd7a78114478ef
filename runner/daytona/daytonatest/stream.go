package daytonatest

import (
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// How the daemon follows a command's log (DMN/internal/util/log_reader.go,
// ReadLogWithExitCode): it reads 1 KiB at a time, sleeps 20 ms after each
// read that finds nothing new, and only after 50 such reads in a row (about
// a second of quiet) looks whether the exit-code file exists. So the stream
// of a command that ends in silence closes up to a second after it ended.
const (
	streamChunk    = 1024
	streamIdle     = 20 * time.Millisecond
	streamIdleRuns = 50
)

var upgrader = websocket.Upgrader{
	// The toolbox proxy authenticates by bearer token, not by origin.
	CheckOrigin: func(*http.Request) bool { return true },
}

// serveLogStream answers .../logs?follow=true with a WebSocket upgrade, as
// the daemon does (DMN/pkg/session/log.go): binary frames of the raw log,
// markers included, until the command's exit code exists, then a close
// frame with 1000. A killed command never gets one: its stream follows
// until the client leaves, or is cut without a close frame when the
// sandbox is deleted or the server closes. f may be a Drop or Stall fault.
func (s *Server) serveLogStream(h *handlerCtx, f *Fault, call *Call) {
	sb := s.toolboxSandbox(h)
	if sb == nil {
		return
	}
	c := s.findCommand(h, sb)
	if c == nil {
		return
	}
	cut, release := s.openStream(sb)
	if cut == nil {
		h.toolboxError(http.StatusUnauthorized, "authentication failed: sandbox %s not found", sb.id)
		return
	}
	defer release()

	conn, err := upgrader.Upgrade(h.w, h.r, nil)
	if err != nil {
		// The upgrader has answered the client with an HTTP error.
		s.violation("%s: WebSocket upgrade failed: %v", OpSessionLogsStream, err)
		return
	}
	call.Status = http.StatusSwitchingProtocols
	defer conn.Close()

	// Like the daemon, read what the client sends so that its close frame
	// (or its going away) ends the stream.
	left := make(chan struct{})
	go func() {
		defer close(left)
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}()

	if f != nil && f.Stall {
		call.Fault = "stall"
		select {
		case <-left:
		case <-cut:
		}
		return
	}
	if s.followLog(conn, c, f != nil && f.Drop, left, cut) {
		call.Fault = "drop"
	}
}

// openStream registers a log stream of sb's, which deleting sb cuts (it
// closes cut), and release unregisters it; cut is nil when sb is gone.
func (s *Server) openStream(sb *sandbox) (cut chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone(sb) {
		return nil, nil
	}
	cut = make(chan struct{})
	sb.streams[cut] = struct{}{}
	s.workers.Add(1)
	return cut, func() {
		s.mu.Lock()
		delete(sb.streams, cut)
		s.mu.Unlock()
		s.workers.Done()
	}
}

// followLog sends c's log on conn as the daemon follows it (the constants
// above) until its exit code exists (then a close frame), the client
// leaves or the stream is cut. With drop it ends without a close frame
// once the log holds nothing new, and says so.
func (s *Server) followLog(conn *websocket.Conn, c *sessCmd, drop bool, left, cut <-chan struct{}) (dropped bool) {
	off, idle := 0, 0
	for {
		p := s.procOf(c)
		var chunk []byte
		if p != nil {
			chunk = p.log.from(off, streamChunk)
		}
		if len(chunk) > 0 {
			if err := conn.WriteMessage(websocket.BinaryMessage, chunk); err != nil {
				return false
			}
			off += len(chunk)
			idle = 0
			continue
		}
		if drop {
			return true // conn.Close: no close frame
		}
		if idle++; idle >= streamIdleRuns {
			idle = 0
			if c.exitCode() != nil {
				if p != nil && len(p.log.from(off, 1)) > 0 {
					continue // written while we looked
				}
				conn.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
				return false
			}
			s.mu.Lock()
			s.unfinished[c.id]++ // a look that found no exit code (ExitCodeLooks)
			s.mu.Unlock()
		}
		select {
		case <-time.After(streamIdle):
		case <-left:
			return false
		case <-cut:
			return false
		}
	}
}
