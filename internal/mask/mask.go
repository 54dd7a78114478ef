// Package mask hides secret values in text that came from a candidate or a
// judge: every occurrence of a secret, or of one of its common encodings, is
// replaced by "***" before forge writes or prints the text.
//
// # What is masked
//
// New takes the secret values; one shorter than MinLen (6) bytes is ignored,
// as masking it would garble ordinary output and hide little. Besides each
// value, its trimmed form (a key read from a file keeps its newline), its
// unquoted form and each line of a value of several lines (a PEM key printed
// line by line) are masked, when at least MinLen bytes, in these forms:
//
//   - the raw bytes;
//   - base64, standard and URL alphabets, padded and unpadded;
//   - base64 of the value inside a longer base64 stream (base64("user:"+key),
//     a data: URL, a JWT, a Basic auth header). Starting at offset skip = 0,
//     1 or 2 modulo 3, value[skip:] encodes stably for its first
//     floor(4k/3) characters (k = len(value)-skip); that stable middle is
//     masked at each offset, even below MinLen (at least 5 characters), and
//     the whole encodings of value[skip:] for a value ending the stream.
//     What stays visible encodes at most the value's first two bytes and
//     four bits of its last: it cannot be decoded;
//   - percent-encoding: url.QueryEscape, url.PathEscape and strict RFC 3986
//     (as .NET's Uri.EscapeDataString and Python's quote(safe=""));
//   - string escaping: JSON as encoding/json writes it (with and without its
//     HTML escaping), with non-ASCII as \uXXXX (Python), with "/" as "\/"
//     (PHP), Go's %q and QuoteToASCII, `"` as `\"`, a doubled single quote,
//     and HTML/XML escaping.
//
// The list follows the GitHub Actions runner's SecretMasker
// (actions/runner, ValueEncoders.cs), but where the runner masks the whole
// unpadded encoding of value[skip:], whose last character depends on the
// byte after the value, and so misses a secret in the middle of a stream
// unless len(value)-skip is a multiple of 3, the stable middle finds it at
// every offset.
//
// # How occurrences are masked
//
// All occurrences of all forms are found, overlapping ones included, and
// each maximal run of overlapping occurrences becomes one "***" (touching
// ones stay separate: a secret printed twice becomes "******"). No byte of
// any occurrence survives, whatever the secrets' order. strings.Replacer
// cannot do this: it resumes after each replacement, so secrets "abcdefgh"
// and "fghijklm" turn "abcdefghijklm" into "***ijklm" (mask_test.go checks
// it). The package builds its own Aho–Corasick automaton, a dense table over
// byte classes: one look-up per input byte whatever the number of secrets,
// about 8·L states for a secret of L bytes, some hundreds of KiB for a
// handful of API keys.
//
// A Masker is immutable once made, and safe for concurrent use.
package mask

import (
	"fmt"
	"slices"
	"strings"
)

// MinLen is the length in bytes below which a secret value is not masked.
const MinLen = 6

// Mask is what each masked occurrence is replaced by.
const Mask = "***"

// matchFlag marks, in a transition table entry, a target state at which some
// form ends.
const matchFlag = 1 << 31

// A Masker replaces secret values, and their common encodings, by Mask. The
// zero Masker and a nil *Masker mask nothing.
type Masker struct {
	forms []string // every form masked, longest first

	// The Aho–Corasick automaton. A state s is kept premultiplied by nc, so
	// the next state after byte c is delta[s+class[c]] &^ matchFlag.
	nc     uint32
	class  [256]uint32
	delta  []uint32
	outLen []int32 // per state index: the longest form ending here, or 0
}

// New returns a Masker for the given secret values. Empty values, values
// shorter than MinLen and repeated values are ignored; see the package
// documentation for the forms masked. New(), or New with only short values,
// returns a Masker that masks nothing.
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
	slices.SortFunc(forms, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
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

	// The trie.
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

// mergeSpan adds the occurrence [a, b) to spans, which are disjoint and
// sorted, and which all end at or before b: it joins every span it
// overlaps.
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

// String returns s with every occurrence of a secret's forms replaced by
// Mask.
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

// Contains reports whether b holds an occurrence of a secret's forms, that
// is whether String(string(b)) would differ from it.
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
