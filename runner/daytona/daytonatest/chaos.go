package daytonatest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"
)

// ChaosRule makes a share of the matching calls fail, as a real service
// fails on a bad day; a seeded generator (SetChaos) picks which.
type ChaosRule struct {
	// Ops are the operation IDs the rule applies to; empty: every call, or
	// with Toolbox every toolbox call.
	Ops     []string
	Toolbox bool
	Rate    float64 // the share of matching calls that get Fault, 0 to 1
	Fault   Fault   // as with Inject; After is ignored on the log stream
}

// BadNight is a night on a cloud that fails a little, as nightly
// benchmarks meet it: a few percent of every kind of call fail, some after
// they had their effect.
func BadNight() []ChaosRule {
	session := []string{OpCreateSession, OpSessionExec, OpSessionCommand, OpGetSession, OpDeleteSession,
		OpSessionLogs, OpSessionLogsStream}
	return []ChaosRule{
		{Ops: []string{OpCreateSandbox}, Rate: 0.05, Fault: Fault{Status: http.StatusServiceUnavailable}},
		{Ops: []string{OpCreateSandbox}, Rate: 0.03, Fault: Fault{Status: http.StatusInternalServerError, After: true}},
		{Ops: []string{OpCreateSandbox}, Rate: 0.10, Fault: Fault{Delay: 1500 * time.Millisecond}},
		{Ops: []string{OpDeleteSandbox}, Rate: 0.08, Fault: Fault{Status: http.StatusBadGateway}},
		{Ops: []string{OpGetSandbox}, Rate: 0.05, Fault: Fault{Status: http.StatusGatewayTimeout}},
		{Ops: []string{OpSessionExec}, Rate: 0.04, Fault: Fault{Status: http.StatusBadGateway, After: true}},
		{Ops: session, Rate: 0.04, Fault: Fault{Status: http.StatusServiceUnavailable}},
		{Ops: []string{OpUploadFile}, Rate: 0.04, Fault: Fault{Drop: true}},
		{Toolbox: true, Rate: 0.06, Fault: Fault{Status: http.StatusBadGateway}},
	}
}

// chaos is the server's chaos: its rules, seed and what it did.
type chaos struct {
	seed  uint64
	rules []ChaosRule
	seen  map[string]uint64 // (rule, op, key) -> calls so far
	fired map[string]int    // op -> calls chaos changed
}

// SetChaos replaces the chaos rules (none: no chaos); injected faults come
// first. A call's fate does not depend on how concurrent calls interleave:
// it is drawn with seed and a hash of the rule, the operation, the call's
// key (chaosKey) and how many earlier calls had the same three.
func (s *Server) SetChaos(seed uint64, rules ...ChaosRule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chaos = &chaos{seed: seed, rules: slices.Clone(rules), seen: map[string]uint64{}, fired: map[string]int{}}
}

// ChaosFired is, per operation ID, how many calls chaos changed.
func (s *Server) ChaosFired() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	if s.chaos != nil {
		maps.Copy(out, s.chaos.fired)
	}
	return out
}

// chaosFault is the fault chaos gives the call, or nil. The caller holds
// s.mu.
func (s *Server) chaosFault(h *handlerCtx, body []byte) *Fault {
	c := s.chaos
	if c == nil {
		return nil
	}
	op, toolbox, key := h.op, h.toolbox, s.chaosKey(h, body)
	for i, rule := range c.rules {
		if !slices.Contains(rule.Ops, op) && (len(rule.Ops) > 0 || rule.Toolbox && !toolbox) {
			continue // not one of its Ops; without Ops, not a toolbox call for a Toolbox rule
		}
		id := fmt.Sprintf("%d\x00%s\x00%s", i, op, key)
		n := c.seen[id]
		c.seen[id] = n + 1
		h := fnv.New64a()
		h.Write(binary.LittleEndian.AppendUint64(nil, uint64(i)))
		h.Write([]byte(op + "\x00" + key + "\x00"))
		h.Write(binary.LittleEndian.AppendUint64(nil, n))
		if rand.New(rand.NewPCG(c.seed, h.Sum64())).Float64() < rule.Rate {
			c.fired[op]++
			f := rule.Fault
			return &f
		}
	}
	return nil
}

// chaosKey names what a call is about whatever the order of concurrent
// calls: the sandbox's name (its id is given in arrival order), with the
// path for uploads and downloads; else the method, path and query. Under
// s.mu.
func (s *Server) chaosKey(h *handlerCtx, body []byte) string {
	name := ""
	switch {
	case h.op == OpCreateSandbox:
		var req struct {
			Name string `json:"name"`
		}
		json.Unmarshal(body, &req)
		name = req.Name
	case h.toolbox:
		if sb := s.sandboxes[h.sandboxID]; sb != nil {
			name = sb.origName
		}
	default:
		name = h.params["sandboxIdOrName"]
		if sb := s.sandboxes[name]; sb != nil {
			name = sb.origName
		}
	}
	if name == "" {
		return h.r.Method + " " + h.r.URL.Path + "?" + h.r.URL.RawQuery
	}
	if h.op == OpUploadFile || h.op == OpDownloadFile {
		return name + " " + h.r.URL.Query().Get("path")
	}
	return name
}
