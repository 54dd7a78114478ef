package daytonatest

import (
	"io"
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
	if f.Times <= 0 {
		f.Times = 1
	}
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

func (s *Server) takeFault(op string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.faults[op]
	if len(q) == 0 {
		return nil
	}
	f := *q[0]
	q[0].Times--
	if q[0].Times <= 0 {
		s.faults[op] = q[1:]
	}
	return &f
}

// wait sleeps for d unless the client leaves or the server closes; it says
// whether to go on.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	case <-s.closing:
		return false
	}
}

func (s *Server) writeFault(w http.ResponseWriter, r *http.Request, f *Fault, toolbox bool) {
	for k, vs := range f.Header {
		w.Header()[k] = vs
	}
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
	if toolbox {
		writeToolboxError(w, r, f.Status, msg)
	} else {
		writeAPIError(w, r, f.Status, msg)
	}
}
