package daytonatest

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"time"
)

// Fault replaces the normal answer of a route for the next Times calls.
type Fault struct {
	Status     int         // answered instead of handling the call (no side effect)
	Times      int         // how many calls it affects; 0 means 1
	RetryAfter string      // sent as Retry-After
	Header     http.Header // more headers, e.g. "Retry-After-sandbox-create"
	Body       string      // replaces the default JSON error body
	// Drop performs the call (its side effect happens), then closes the
	// connection unanswered: an ambiguous outcome. On the log stream it
	// sends what the log holds, then cuts without a close frame.
	Drop bool
	// Hang never answers, until the client gives up or the server closes.
	Hang bool
	// Stall, on the log stream only, upgrades, then sends nothing and never
	// closes: a half-open connection.
	Stall bool
	// After, with Status, handles the call first (a sandbox is created, a
	// command starts, a file is written), then answers Status: a gateway
	// that fails after the service acted.
	After bool
	Delay time.Duration // before the call is handled (or, with Status, answered)
}

// Inject queues a fault for the route with operation ID op. Faults for one
// route apply in the order they were injected.
func (s *Server) Inject(op string, f Fault) {
	f.Times = max(f.Times, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[op] = append(s.faults[op], &f)
}

// SetLatency delays every call of the route before it is handled.
func (s *Server) SetLatency(op string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency[op] = d
}

// await waits until ready, or abandons the call unanswered when the
// client leaves or the server closes first.
func await[T any](s *Server, r *http.Request, ready <-chan T) {
	select {
	case <-ready:
	case <-r.Context().Done():
		panic(http.ErrAbortHandler)
	case <-s.closing:
		panic(http.ErrAbortHandler)
	}
}

func (s *Server) writeFault(w http.ResponseWriter, h *handlerCtx, f *Fault) {
	maps.Copy(w.Header(), f.Header)
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		io.WriteString(w, f.Body)
		return
	}
	msg := http.StatusText(f.Status)
	switch f.Status {
	case http.StatusTooManyRequests:
		msg = "Rate limit exceeded"
	case http.StatusUnauthorized:
		msg = "Invalid credentials"
	}
	writeError(w, h.r, h.toolbox, f.Status, msg)
}

// fault is the fault to play on a call: the next one injected, else
// chaos's; by says which ("" or "chaos "), as Call.Fault names it.
func (s *Server) fault(h *handlerCtx, body []byte) (f *Fault, by string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.faults[h.op]; len(q) > 0 {
		f := *q[0]
		q[0].Times--
		if q[0].Times <= 0 {
			s.faults[h.op] = q[1:]
		}
		return &f, ""
	}
	if f := s.chaosFault(h, body); f != nil {
		return f, "chaos "
	}
	return nil, ""
}

// faultBefore plays what f does before the call is handled: a delay, a
// hang, or a status in place of the answer. It says whether the call is
// over.
func (s *Server) faultBefore(h *handlerCtx, f *Fault, by string, call *Call) bool {
	if f == nil {
		return false
	}
	if f.Delay > 0 {
		call.Fault = by + "delay"
		await(s, h.r, time.After(f.Delay))
	}
	switch {
	case f.Hang:
		call.Fault = by + "hang"
		select {
		case <-h.r.Context().Done():
		case <-s.closing:
		}
		panic(http.ErrAbortHandler) // never answer
	case f.Status != 0 && !f.Drop && !f.Stall && !f.After:
		call.Fault = by + fmt.Sprint(f.Status)
		s.writeFault(h.w, h, f)
		return true
	}
	return false
}

// faultAfter plays what f does once the call is handled: a status in place
// of the answer, or a dropped connection. It says whether the call is over.
func (s *Server) faultAfter(w http.ResponseWriter, h *handlerCtx, f *Fault, by string, call *Call) bool {
	switch {
	case f == nil:
		return false
	case f.After && f.Status != 0:
		call.Fault = by + "after " + fmt.Sprint(f.Status)
		s.writeFault(w, h, f)
		return true
	case f.Drop:
		call.Fault = by + "drop"
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
			return true
		}
		panic(http.ErrAbortHandler)
	}
	return false
}
