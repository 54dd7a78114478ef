package daytonatest

import (
	"fmt"
	"slices"
	"time"
)

// Call is one request the server received.
type Call struct {
	Op     string
	Method string
	Path   string
	// Query is the request's raw query and Body its body (up to
	// MaxRecordedBody bytes): what a test reads to prove what forge sent.
	Query string
	Body  []byte
	// Status is what the client got; 0 when the answer was dropped or the
	// call hung.
	Status     int
	Start, End time.Time
	// Fault says which injected fault answered, if any.
	Fault string
}

// MaxRecordedBody bounds the body a Call keeps.
const MaxRecordedBody = 1 << 20

// Calls is how many requests the route received.
func (s *Server) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return count(s.calls, func(c Call) bool { return c.Op == op })
}

// CallLog returns every request received so far, in arrival order.
func (s *Server) CallLog() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.calls)
	slices.SortStableFunc(out, func(a, b Call) int { return a.Start.Compare(b.Start) })
	return out
}

// Violations lists every request or response that did not match the specs,
// and every route forge called that the emulator does not know.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

// LiveCount is how many sandboxes exist and have not been deleted.
func (s *Server) LiveCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveCount()
}

// liveCount counts the sandboxes not deleted. The caller holds s.mu.
func (s *Server) liveCount() int {
	return count(s.order, func(sb *sandbox) bool { return sb.deletedAt.IsZero() })
}

// count is how many elements of all f holds for.
func count[T any](all []T, f func(T) bool) int {
	n := 0
	for _, x := range all {
		if f(x) {
			n++
		}
	}
	return n
}

// PeakLive is the largest number of sandboxes that were alive at once.
func (s *Server) PeakLive() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak
}

// Live describes the sandboxes not yet deleted.
func (s *Server) Live() []SandboxInfo {
	return slices.DeleteFunc(s.Sandboxes(), func(sb SandboxInfo) bool { return !sb.DeletedAt.IsZero() })
}

// Sandboxes describes every sandbox ever created, in creation order.
func (s *Server) Sandboxes() []SandboxInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	out := make([]SandboxInfo, 0, len(s.order))
	for _, sb := range s.order {
		out = append(out, sb.info(now))
	}
	return out
}

// Alive says whether the process the sandbox id knows as pid (its
// commands' $$ or $!) still exists, a zombie included. With RootFS that
// is a pid of the sandbox's own PID namespace, found even once the
// sandbox is deleted; without, it is this machine's.
func (s *Server) Alive(id string, pid int) bool {
	s.mu.Lock()
	sb := s.sandboxes[id]
	var fs *fsRoot
	if sb != nil {
		fs = sb.fs
	}
	s.mu.Unlock()
	switch {
	case sb == nil:
		return false
	case !RootFS():
		return processExists(pid)
	}
	return fs != nil && fs.alive(pid)
}

// Running is how many commands (and images' entrypoints) the emulator
// has running, in all sandboxes; not what they left running.
func (s *Server) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sb := range s.order {
		n += len(sb.procs)
	}
	return n
}

func (s *Server) violation(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}
