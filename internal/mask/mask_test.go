package mask

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"
)

// naive masks s the slow, obvious way: every occurrence of every form, by
// strings.Index at every position, overlapping runs joined.
func naive(m *Masker, s string) string {
	var spans []span
	for _, f := range m.forms {
		for i := 0; i+len(f) <= len(s); i++ {
			if strings.HasPrefix(s[i:], f) {
				spans = append(spans, span{int64(i), int64(i + len(f))})
			}
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.start - b.start) })
	var merged []span
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp.start < merged[n-1].end {
			merged[n-1].end = max(merged[n-1].end, sp.end)
			continue
		}
		merged = append(merged, sp)
	}
	var b strings.Builder
	last := int64(0)
	for _, sp := range merged {
		b.WriteString(s[last:sp.start])
		b.WriteString(Mask)
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// check asserts that String and the naive masker both turn in into want.
func check(t *testing.T, m *Masker, in, want string) {
	t.Helper()
	if got := m.String(in); got != want {
		t.Errorf("String(%q) = %q; want %q", in, got, want)
	}
	if m != nil {
		if got := naive(m, in); got != want {
			t.Errorf("naive(%q) = %q; want %q (test is wrong?)", in, got, want)
		}
	}
	if got := m.Contains([]byte(in)); got != (in != want) {
		t.Errorf("Contains(%q) = %v; want %v", in, got, in != want)
	}
}

const secret = "sk-Abc123XYZ"

func TestRaw(t *testing.T) {
	m := New(secret)
	for _, c := range []struct{ in, want string }{
		{"key=" + secret + " ok", "key=*** ok"},
		{secret + " at start", "*** at start"},
		{"at end " + secret, "at end ***"},
		{secret, "***"},
		{"a " + secret + " b " + secret + " c " + secret, "a *** b *** c ***"},
		{secret + secret, "******"},
		{"x" + secret + secret + "y", "x******y"},
		{secret[:len(secret)-1] + " almost", secret[:len(secret)-1] + " almost"},
		{"no secret here", "no secret here"},
		{"", ""},
	} {
		check(t, m, c.in, c.want)
	}
}

func TestOverlapping(t *testing.T) {
	// Self-overlapping occurrences are one run.
	check(t, New("aaaaaa"), "xaaaaaaaaay", "x***y")
	// Two secrets that overlap: neither may leak.
	m := New("abcdefgh", "fghijklm")
	check(t, m, "abcdefghijklm", "***")
	check(t, m, "0abcdefghijklm1abcdefgh2", "0***1***2")
	check(t, m, "abcdefghfghijklm", "******")
	// One secret inside another: the longer wins, whichever was given first.
	for _, m := range []*Masker{New("long-secret-value", "secret"), New("secret", "long-secret-value")} {
		check(t, m, "a long-secret-value b secret c", "a *** b *** c")
	}
}

// TestStringsReplacerIsNotEnough records what was verified about
// strings.Replacer, which the package does not use: at a position it picks
// the first old string in argument order, not the longest, and an
// occurrence starting inside a replaced one is never seen.
func TestStringsReplacerIsNotEnough(t *testing.T) {
	r := strings.NewReplacer("abcdef", "***", "abcdefgh", "***")
	if got := r.Replace("abcdefgh"); got != "***gh" {
		t.Errorf("Replacer argument order: got %q", got)
	}
	r = strings.NewReplacer("abcdefgh", "***", "fghijklm", "***")
	if got := r.Replace("abcdefghijklm"); got != "***ijklm" {
		t.Errorf("Replacer overlap: got %q", got)
	}
	if got := New("abcdefgh", "fghijklm").String("abcdefghijklm"); got != "***" {
		t.Errorf("Masker overlap: got %q", got)
	}
}

var encodings = []struct {
	name string
	enc  *base64.Encoding
}{
	{"std", base64.StdEncoding},
	{"url", base64.URLEncoding},
	{"rawstd", base64.RawStdEncoding},
	{"rawurl", base64.RawURLEncoding},
}

// recoverable reports whether secret can be decoded from what is left of
// a base64 stream after masking: it decodes each piece between masks, from
// each of the four possible starting characters, as far as it goes.
func recoverable(masked, secret string) bool {
	for piece := range strings.SplitSeq(masked, Mask) {
		piece = strings.TrimRight(piece, "=")
		for off := 0; off < 4 && off < len(piece); off++ {
			q := piece[off:]
			if len(q)%4 == 1 {
				q = q[:len(q)-1]
			}
			for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
				if b, err := enc.DecodeString(q); err == nil && strings.Contains(string(b), secret) {
					return true
				}
			}
		}
	}
	return false
}

func TestRecoverableCanFail(t *testing.T) {
	// The check used below finds the secret when nothing is masked.
	for _, e := range encodings {
		for p := range 3 {
			s := e.enc.EncodeToString([]byte(strings.Repeat("P", p) + secret + "suffix"))
			if !recoverable(s, secret) {
				t.Errorf("%s, prefix %d: recoverable is false on %q", e.name, p, s)
			}
		}
	}
}

func TestBase64(t *testing.T) {
	for n := MinLen; n <= 14; n++ {
		sec := "S3cr.t/+?>~0123456789"[:n] // bytes whose encodings differ by alphabet
		m := New(sec)
		for _, e := range encodings {
			// Alone.
			if got := m.String(e.enc.EncodeToString([]byte(sec))); got != Mask {
				t.Errorf("len %d, %s alone: got %q", n, e.name, got)
			}
			// Embedded, at every alignment, followed by 0 to 4 bytes.
			for p := 0; p < 6; p++ {
				for q := 0; q < 5; q++ {
					plain := "user:"[:p] + sec + "@host"[:q]
					enc := e.enc.EncodeToString([]byte(plain))
					masked := m.String(enc)
					if masked == enc || !strings.Contains(masked, Mask) {
						t.Errorf("len %d, %s, prefix %d, suffix %d: %q not masked", n, e.name, p, q, enc)
					}
					if recoverable(masked, sec) {
						t.Errorf("len %d, %s, prefix %d, suffix %d: secret recoverable from %q", n, e.name, p, q, masked)
					}
				}
			}
		}
	}
}

func TestEncodedForms(t *testing.T) {
	const sec = "ab/c+d=e&f g\"h<i>'j\\k\n\u00e9\U0001F511"
	m := New(sec)
	jsonOf := func(escapeHTML bool) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(escapeHTML)
		if err := enc.Encode(sec); err != nil {
			t.Fatal(err)
		}
		s := strings.TrimSpace(b.String())
		return s[1 : len(s)-1]
	}
	q, qa := strconv.Quote(sec), strconv.QuoteToASCII(sec)
	forms := map[string]string{
		"QueryEscape":      url.QueryEscape(sec),
		"PathEscape":       url.PathEscape(sec),
		"EscapeDataString": `ab%2Fc%2Bd%3De%26f%20g%22h%3Ci%3E%27j%5Ck%0A%C3%A9%F0%9F%94%91`,
		"json.Marshal":     jsonOf(true),
		"json no HTML":     jsonOf(false),
		"json.dumps":       `ab/c+d=e&f g\"h<i>'j\\k\n\u00e9\ud83d\udd11`,
		"json_encode":      `ab\/c+d=e&f g\"h<i>'j\\k\n\u00e9\ud83d\udd11`,
		"%q":               q[1 : len(q)-1],
		"%+q":              qa[1 : len(qa)-1],
		"html":             html.EscapeString(sec),
		"command line":     strings.ReplaceAll(sec, `"`, `\"`),
	}
	for name, f := range forms {
		if f == sec {
			t.Errorf("%s: form equals the raw value: the test proves nothing", name)
		}
		check(t, m, "x["+f+"]y", "x[***]y")
	}
	check(t, m, "x["+sec+"]y", "x[***]y")
}

// TestHexCaseAndUnicodeEscapes: the forms a candidate gets past the
// string escapes with (issue 41): hex in either case (xxd -p, Python's
// .hex(), printf %X), the value upper- or lower-cased, and every character a
// JSON \u escape.
func TestHexCaseAndUnicodeEscapes(t *testing.T) {
	const sec = "sk-Abc123XYZ\u00e9\U0001F511"
	m := New(sec)
	h := hex.EncodeToString([]byte(sec))
	var esc strings.Builder
	for _, u := range utf16.Encode([]rune(sec)) {
		fmt.Fprintf(&esc, `\u%04x`, u)
	}
	var back string
	if err := json.Unmarshal([]byte(`"`+esc.String()+`"`), &back); err != nil || back != sec {
		t.Fatalf("the test's \\u form %s reads back as %q (%v)", esc.String(), back, err)
	}
	for name, f := range map[string]string{
		"hex":              h,
		"HEX":              strings.ToUpper(h),
		"upper":            strings.ToUpper(sec),
		"lower":            strings.ToLower(sec),
		"\\u escapes":      esc.String(),
		"\\u, hex in caps": strings.ReplaceAll(strings.ToUpper(esc.String()), `\U`, `\u`),
	} {
		if f == sec {
			t.Errorf("%s: form equals the raw value: the test proves nothing", name)
		}
		check(t, m, "x["+f+"]y", "x[***]y")
		// Inside a longer stream of the same encoding.
		switch name {
		case "hex":
			pre := hex.EncodeToString([]byte("user:"))
			check(t, m, pre+f+"0a", pre+"***0a")
		case "HEX":
			pre := strings.ToUpper(hex.EncodeToString([]byte("user:")))
			check(t, m, pre+f+"0A", pre+"***0A")
		}
	}
}

func TestDerivedValues(t *testing.T) {
	// A value read from a file with its newline; quoted; several lines.
	m := New("  sk-trimmed-key\n", `"quoted-value"`, "-----BEGIN KEY-----\r\nAAAABBBBCCCC\r\nDDDD\r\n-----END KEY-----\n")
	check(t, m, "k=sk-trimmed-key;", "k=***;")
	check(t, m, "q=quoted-value;", "q=***;")
	check(t, m, "    AAAABBBBCCCC\n    DDDD\n", "    ***\n    DDDD\n")
}

func TestShortSecretsNeverMasked(t *testing.T) {
	for _, short := range []string{"", "a", "12345", "ab/+="} {
		m := New(short)
		if !m.empty() {
			t.Errorf("New(%q) masks %q", short, m.forms)
		}
		in := "x " + short + " " + base64.StdEncoding.EncodeToString([]byte(short)) + " " + url.QueryEscape(short)
		check(t, m, in, in)
	}
	// Short ones among long ones are ignored too; a 6-byte one is masked.
	m := New("12345", "123456")
	check(t, m, "12345 123456 1234567", "12345 *** ***7")
	// Repeats do not change anything.
	if a, b := New(secret).forms, New(secret, secret, secret).forms; !slices.Equal(a, b) {
		t.Errorf("repeats change the forms: %d vs %d", len(a), len(b))
	}
}

func TestEmptyMaskerPassesThrough(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 10000)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	for name, m := range map[string]*Masker{"nil": nil, "New()": New(), "zero": {}, "short": New("short")} {
		if got := m.String(string(data)); got != string(data) {
			t.Errorf("%s: String changed the data", name)
		}
		if m.Contains(data) {
			t.Errorf("%s: Contains is true", name)
		}
	}
}

func TestContains(t *testing.T) {
	m := New(secret, "abcdefgh")
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"", false},
		{"nothing", false},
		{secret[:len(secret)-1], false},
		{"abcdefg", false},
		{"x" + secret, true},
		{secret + "x", true},
		{"xxabcdefghxx", true},
		{base64.StdEncoding.EncodeToString([]byte("user:" + secret)), true},
		{url.QueryEscape("abcdefgh"), true},
	} {
		if got := m.Contains([]byte(c.in)); got != c.want {
			t.Errorf("Contains(%q) = %v; want %v", c.in, got, c.want)
		}
	}
	if (*Masker)(nil).Contains([]byte(secret)) {
		t.Error("nil Masker contains something")
	}
}

// TestProperty checks, with random secrets and inputs, that String agrees
// with the naive masker and that no form survives.
func TestProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	randString := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	alphabets := []string{"ab", "abc", "aB+/=", "abcdefghijklmnopqrstuvwxyz0123456789-_", "\x00\xff\n \"\\/+=%&<>abc"}
	for iter := range 400 {
		alpha := alphabets[iter%len(alphabets)]
		var secrets []string
		for range 1 + r.IntN(4) {
			secrets = append(secrets, randString(alpha, 3+r.IntN(10)))
		}
		m := New(secrets...)
		var in strings.Builder
		for in.Len() < 2000 {
			switch r.IntN(4) {
			case 0:
				in.WriteString(randString(alpha, r.IntN(20)))
			case 1:
				in.WriteString(secrets[r.IntN(len(secrets))])
			default:
				if len(m.forms) > 0 {
					in.WriteString(m.forms[r.IntN(len(m.forms))])
				}
			}
		}
		s := in.String()
		want := m.String(s)
		if got := naive(m, s); got != want {
			t.Fatalf("iter %d, secrets %q: String and naive differ:\n%q\n%q", iter, secrets, want, got)
		}
		for _, f := range m.forms {
			if strings.Contains(strings.ReplaceAll(want, Mask, "\x01"), f) {
				t.Fatalf("iter %d: form %q survives in %q", iter, f, want)
			}
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	m := New(secret)
	in := strings.Repeat("x "+secret+" y ", 100)
	want := strings.Repeat("x *** y ", 100)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if m.String(in) != want || !m.Contains([]byte(in)) {
				t.Error("concurrent use gave a different result")
			}
		})
	}
	wg.Wait()
}

func benchInput(secrets []string) []byte {
	r := rand.New(rand.NewPCG(3, 4))
	var b bytes.Buffer
	words := []string{"the", "model", "returned", "tokens", "error:", "retrying", "{\"id\":", "42,", "\n", "ok"}
	for b.Len() < 1<<20 {
		if r.IntN(200) == 0 {
			b.WriteString(secrets[r.IntN(len(secrets))])
		} else {
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteByte(' ')
	}
	return b.Bytes()[:1<<20]
}

func benchSecrets() []string {
	var s []string
	for i := range 5 {
		s = append(s, fmt.Sprintf("sk-proj-%02dAbCdEfGhIjKlMnOpQrStUvWxYz0123456789", i))
	}
	return s
}

func BenchmarkString(b *testing.B) {
	secrets := benchSecrets()
	m := New(secrets...)
	in := string(benchInput(secrets))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		m.String(in)
	}
}

func BenchmarkNew(b *testing.B) {
	secrets := benchSecrets()
	var m *Masker
	for b.Loop() {
		m = New(secrets...)
	}
	b.ReportMetric(float64(len(m.forms)), "forms")
	b.ReportMetric(float64(len(m.outLen)), "states")
	b.ReportMetric(float64(4*len(m.delta)), "table-bytes")
}
