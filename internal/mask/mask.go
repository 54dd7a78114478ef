// Package mask hides secret values in text that came from a candidate or a
// judge: every occurrence of a secret, or of one of its common encodings, is
// replaced by "***" before forge writes or prints the text.
//
// # What is masked
//
// New takes the secret values. A value shorter than MinLen (6) bytes is
// ignored: masking it would garble ordinary output and would hide little.
// Besides each value as given, these values are masked too, when different
// and at least MinLen bytes long: the value with surrounding white space
// trimmed (a key read from a file often keeps its newline), the value with
// surrounding quotes trimmed, and each line of a value of several lines
// (trimmed), since a program may print a PEM key line by line. For every
// such value these forms are masked:
//
//   - the raw bytes;
//   - base64 in the standard and the URL alphabets, padded and unpadded;
//   - base64 of the value embedded in a longer base64 stream
//     (base64("user:"+key), a data: URL, a JWT, a Basic auth header). The
//     value then starts at one of three offsets modulo 3 of the stream and
//     encodes differently at each. For skip = 0, 1, 2 the value's first skip
//     bytes complete the group begun by the unknown bytes before it, and
//     value[skip:] starts on a group boundary; its encoding is stable up to
//     the last character that depends only on the value's bytes, that is for
//     the first floor(4*k/3) characters (k = len(value)-skip); the characters
//     after it depend on the unknown bytes that follow. That stable middle
//     is masked (both alphabets), together with the whole encodings of
//     value[skip:] (unpadded and padded) for a value at the end of the
//     stream. What stays visible next to the "***" encodes at most the
//     value's first two bytes and four bits of its last byte: the value
//     cannot be decoded from it;
//   - percent-encoding: url.QueryEscape, url.PathEscape and the strict
//     RFC 3986 form (every byte but A-Z a-z 0-9 - . _ ~ escaped, as .NET's
//     Uri.EscapeDataString, Python's quote(safe="") and, nearly, JavaScript's
//     encodeURIComponent do);
//   - string escaping: JSON as encoding/json writes it (with and without its
//     HTML escaping of < > &), JSON with non-ASCII as \uXXXX (Python's
//     json.dumps), the same with "/" as "\/" (PHP's json_encode), Go's
//     strconv.Quote and QuoteToASCII (%q), `"` as `\"` (command lines), a
//     single quote doubled (SQL, expressions), and HTML/XML escaping
//     (html.EscapeString, xml.EscapeText).
//
// The list follows the GitHub Actions runner (actions/runner,
// src/Sdk/DTLogging/Logging/ValueEncoders.cs and SecretMasker), which masks a
// secret, its lines, and its Base64 (for skip 0, 1, 2, both alphabets,
// padding removed), JSON, URI-data, XML, command-line and expression
// escapes. One difference: the runner masks the whole unpadded encoding of
// value[skip:], whose last character also depends on the byte after the
// value, so it misses a secret in the middle of a base64 stream unless
// len(value)-skip is a multiple of 3. Masking the stable middle, as here,
// finds it at every offset. The middle is always at least 5 characters
// (a 6-byte value at skip 2); it is masked even below MinLen, as otherwise
// a 6-byte secret would be left whole, and decodable, in one alignment in
// three.
//
// # How occurrences are masked
//
// All occurrences of all forms are found, overlapping ones included, and
// each maximal run of overlapping occurrences is replaced by one "***".
// Occurrences that only touch stay separate: a secret printed twice in a
// row becomes "******". This is the union of the occurrences, so no byte of
// any occurrence survives, whichever secrets overlap and in whatever order
// they were given; the longest form found at a place always wins over a
// shorter one that it contains.
//
// strings.Replacer was considered and not used. Its generic algorithm (a
// trie, used as soon as one old string is longer than a byte) replaces, at
// each position, the first old string in argument order that matches there
// (not the longest), and then resumes after the replaced text. Sorting the
// forms longest first would give longest-match-at-a-position, but an
// occurrence that starts inside an earlier replaced one is never seen:
// secrets "abcdefgh" and "fghijklm" turn "abcdefghijklm" into "***ijklm",
// which leaks most of the second secret (mask_test.go checks this). So the
// package builds its own Aho–Corasick automaton, as a dense table over byte
// classes (the bytes that occur in some form, plus one class for all
// others): one table look-up per input byte, whatever the number of
// secrets. The
// table has (total length of the forms) × (distinct bytes in them + 1)
// entries of 4 bytes; about 8·L states for a secret of L bytes, so some
// hundreds of KiB for a handful of API keys.
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
