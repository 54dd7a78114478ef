// Package mask hides secret values in text that came from a candidate or a
// judge: every occurrence of a secret, or of a common encoding of it, becomes
// "***" before forge writes or prints the text.
//
// Values shorter than MinLen are ignored (masking them would garble ordinary
// output). Each value, trimmed, unquoted and line by line, is masked raw, in
// base64 (both alphabets, padded or not), percent-encoded and string-escaped
// (JSON, Python, PHP, Go, HTML), as the GitHub Actions runner's SecretMasker
// does; beyond it, in hex (either case), upper- and lower-cased, and with
// every character a JSON \u escape (either case), which the runner misses.
// Inside a longer base64 stream (a Basic auth header, a JWT) the part of the
// encoding that does not depend on the neighbouring bytes is masked at each
// of the three offsets: the runner's whole-encoding match misses it.
//
// Overlapping occurrences become one "***", so no byte of any survives
// whatever the secrets' order; strings.Replacer resumes after each
// replacement and would leak some. Hence an Aho–Corasick automaton of its
// own: one look-up per input byte however many secrets.
//
// A Masker is immutable once made, and safe for concurrent use.
package mask

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// MinLen is the length in bytes below which a secret value is not masked.
const MinLen = 6

// Mask is what each masked occurrence is replaced by.
const Mask = "***"

// matchFlag marks a transition to a state at which some form ends.
const matchFlag = 1 << 31

// Masker replaces secret values and their encodings by Mask; the zero Masker
// and a nil *Masker mask nothing.
type Masker struct {
	forms []string // every form masked, longest first

	// The Aho–Corasick automaton. A state s is kept premultiplied by nc, so
	// the next state after byte c is delta[s+class[c]] &^ matchFlag.
	nc     uint32
	class  [256]uint32
	delta  []uint32
	outLen []int32 // per state index: the longest form ending here, or 0
}

// New returns a Masker for the given secret values; empty, short and repeated
// values are ignored, and New() masks nothing.
func New(secrets ...string) *Masker {
	seen := make(map[string]bool)
	var forms []string
	for _, v := range values(secrets) {
		for _, f := range formsOf(v) {
			if f != "" && !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	m := &Masker{}
	if len(forms) == 0 {
		return m
	}
	slices.SortFunc(forms, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	m.forms = forms
	m.build()
	return m
}

// build makes the automaton for m.forms.
func (m *Masker) build() {
	// Byte classes: one per byte used by some form, class 0 for the rest.
	nc := uint32(1)
	for _, f := range m.forms {
		for i := 0; i < len(f); i++ {
			if m.class[f[i]] == 0 {
				m.class[f[i]] = nc
				nc++
			}
		}
	}

	children := make(map[uint64]uint32)
	term := []int32{0}
	for _, f := range m.forms {
		n := uint32(0)
		for i := 0; i < len(f); i++ {
			k := uint64(n)<<8 | uint64(f[i])
			c, ok := children[k]
			if !ok {
				c = uint32(len(term))
				children[k] = c
				term = append(term, 0)
			}
			n = c
		}
		term[n] = int32(len(f))
	}
	states := uint64(len(term))
	if states*uint64(nc) >= matchFlag {
		panic(fmt.Sprintf("mask: %d secret forms are too many to mask", len(m.forms)))
	}

	// The dense table: trie edges first, then the failure transitions,
	// breadth first, so a state's failure state (shallower) is complete
	// before the state itself.
	const none = ^uint32(0)
	delta := make([]uint32, states*uint64(nc))
	for i := range delta {
		delta[i] = none
	}
	for k, c := range children {
		delta[uint32(k>>8)*nc+m.class[byte(k)]] = c
	}
	fail := make([]uint32, states)
	out := term
	queue := make([]uint32, 0, states)
	for c := uint32(0); c < nc; c++ {
		if v := delta[c]; v == none {
			delta[c] = 0
		} else {
			queue = append(queue, v) // fail[v] = 0
		}
	}
	for qi := 0; qi < len(queue); qi++ {
		u := queue[qi]
		f := fail[u]
		out[u] = max(out[u], out[f])
		row, frow := u*nc, f*nc
		for c := uint32(0); c < nc; c++ {
			if v := delta[row+c]; v == none {
				delta[row+c] = delta[frow+c]
			} else {
				fail[v] = delta[frow+c]
				queue = append(queue, v)
			}
		}
	}
	for i, t := range delta {
		e := t * nc
		if out[t] > 0 {
			e |= matchFlag
		}
		delta[i] = e
	}
	m.nc, m.delta, m.outLen = nc, delta, out
}

func (m *Masker) empty() bool { return m == nil || m.delta == nil }

// span is a run of masked bytes, [start, end).
type span struct{ start, end int64 }

// mergeSpan adds [a, b) to spans (disjoint, sorted, all ending at or before
// b), joining every span it overlaps.
func mergeSpan(spans []span, a, b int64) []span {
	for len(spans) > 0 && spans[len(spans)-1].end > a {
		a = min(a, spans[len(spans)-1].start)
		spans = spans[:len(spans)-1]
	}
	return append(spans, span{a, b})
}

// find returns the runs of text to mask.
func find(m *Masker, text string) []span {
	var spans []span
	delta, class, s := m.delta, &m.class, uint32(0)
	for i := 0; i < len(text); i++ {
		t := delta[s+class[text[i]]]
		s = t &^ matchFlag
		if t&matchFlag != 0 {
			end := int64(i) + 1
			spans = mergeSpan(spans, end-int64(m.outLen[s/m.nc]), end)
		}
	}
	return spans
}

// String returns s with every occurrence of a secret's forms replaced by Mask.
func (m *Masker) String(s string) string {
	if m.empty() {
		return s
	}
	spans := find(m, s)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := int64(0)
	for _, sp := range spans {
		b.WriteString(s[last:sp.start])
		b.WriteString(Mask)
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// Contains reports whether String(string(b)) would differ from b.
func (m *Masker) Contains(b []byte) bool {
	if m.empty() {
		return false
	}
	delta, class, s := m.delta, &m.class, uint32(0)
	for _, c := range b {
		t := delta[s+class[c]]
		if t&matchFlag != 0 {
			return true
		}
		s = t
	}
	return false
}
