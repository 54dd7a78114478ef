// Package text holds the string clean-ups every report needs for bytes a
// candidate printed (invalid UTF-8, escape sequences, caps on a rune
// boundary) and the number formats that make the winner line, reports and
// compare read alike.
package text

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// StripANSI removes terminal escape sequences (CSI and OSC) so captured
// output reads as plain text; a lone ESC is left for the caller.
func StripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != 0x1b || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch s[i+1] {
		case '[': // CSI: parameters and intermediates, then a final byte 0x40–0x7e
			j := i + 2
			for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
				j++
			}
			if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
				i = j + 1
				continue
			}
		case ']': // OSC: up to BEL or ESC \
			if end := strings.IndexAny(s[i+2:], "\x07\x1b"); end >= 0 {
				j := i + 2 + end
				if s[j] == 0x07 {
					i = j + 1
					continue
				}
				if j+1 < len(s) && s[j+1] == '\\' {
					i = j + 2
					continue
				}
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// Cap returns at most max bytes of s, cut on a rune boundary, and how many
// bytes it dropped.
func Cap(s string, max int) (string, int) {
	if max < 0 {
		max = 0
	}
	if len(s) <= max {
		return s, 0
	}
	cut := max
	for back := 0; cut > 0 && back < utf8.UTFMax && !utf8.RuneStart(s[cut]); back++ {
		cut--
	}
	return s[:cut], len(s) - cut
}

// Output prepares captured output for display: escapes stripped, capped at
// max bytes with a note, invalid UTF-8 replaced.
func Output(s string, max int) string {
	kept, dropped := Cap(StripANSI(s), max)
	kept = strings.ToValidUTF8(kept, "\uFFFD")
	if dropped > 0 {
		kept += fmt.Sprintf("\n… [%d more bytes not shown]", dropped)
	}
	return kept
}

// XML makes s safe for XML 1.0: invalid UTF-8 and characters XML cannot
// carry become U+FFFD.
func XML(s string) string {
	// strings.Map returns s itself when no character changes.
	return strings.Map(func(r rune) rune {
		if xmlChar(r) {
			return r
		}
		return '\uFFFD'
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

func xmlChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' ||
		(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

// Decimals is how many decimals x deserves: two significant digits below 10,
// none from 100 up, at most four.
func Decimals(x float64) int {
	ax := math.Abs(x)
	if ax == 0 || math.IsNaN(ax) || math.IsInf(ax, 0) {
		return 2
	}
	d := 1 - int(math.Floor(math.Log10(ax)))
	return max(0, min(d, 4))
}

// Num formats a score: "0.87", "3.2", "42".
func Num(x float64) string {
	return strconv.FormatFloat(x, 'f', Decimals(x), 64)
}

// Seconds formats seconds: "4.5ms", "450ms", "3.2s", "1m05s", "1h02m".
func Seconds(s float64) string {
	switch {
	case math.IsNaN(s) || math.IsInf(s, 0):
		return "—"
	case s < 0:
		return "-" + Seconds(-s)
	case s == 0:
		return "0s"
	case s < 0.01:
		return strconv.FormatFloat(s*1000, 'f', 1, 64) + "ms"
	case s < 1:
		return strconv.FormatFloat(s*1000, 'f', 0, 64) + "ms"
	case s < 59.95:
		return strconv.FormatFloat(s, 'f', 1, 64) + "s"
	case s < 3599.5:
		t := int(math.Round(s))
		return fmt.Sprintf("%dm%02ds", t/60, t%60)
	default:
		t := int(math.Round(s / 60))
		return fmt.Sprintf("%dh%02dm", t/60, t%60)
	}
}

// Score formats a score without an interval: "0.87", "1.00".
func Score(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

// Plural is one when n is 1, else many: "1 task", "3 tasks".
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n with its noun: "1 task", "3 tasks".
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Plural(n, one, many)
}

// AndList joins names as a sentence does: "a", "a and b", "a, b and c".
func AndList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// FirstOf lists names joined with ", ", the first n and how many more:
// "a, b and 3 more".
func FirstOf(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// Ratio formats a ratio of scores or runtimes: "1.24×".
func Ratio(r float64) string { return strconv.FormatFloat(r, 'f', 2, 64) + "×" }

// PM formats a mean ± the half-width of its interval, with the decimals (two
// to four) the half-width needs for one significant digit, so a tight
// interval never reads "± 0.00": "0.92 ± 0.01", "0.8478 ± 0.0006".
func PM(x, halfWidth float64) string {
	d := 2
	if halfWidth > 0 && !math.IsInf(halfWidth, 0) {
		d = max(2, min(4, int(-math.Floor(math.Log10(halfWidth)))))
	}
	return strconv.FormatFloat(x, 'f', d, 64) + " ± " + strconv.FormatFloat(halfWidth, 'f', d, 64)
}

// Interval is x with its interval [lo, hi]: "0.62 ± 0.33" when the
// interval is about even around x (the shorter side at least two thirds
// of the longer), else the range, "0.00 [0.00–0.43]", as for an interval
// a bound clipped.
func Interval(x, lo, hi float64) string {
	pm := PM(x, (hi-lo)/2)
	below, above := x-lo, hi-x
	if min(below, above) >= 2*max(below, above)/3 {
		return pm
	}
	d := len(pm) - strings.LastIndexByte(pm, '.') - 1
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', d, 64) }
	return f(x) + " [" + f(lo) + "–" + f(hi) + "]"
}

// P formats a p-value tested at level alpha with two significant digits,
// more when two would round it across alpha ("p = 0.0496", never "p = 0.05"
// for a significant result).
func P(p, alpha float64) string {
	if p < 0.001 {
		return "p < 0.001"
	}
	s := strconv.FormatFloat(p, 'g', 2, 64)
	if f, _ := strconv.ParseFloat(s, 64); (f >= alpha) != (p >= alpha) {
		s = strconv.FormatFloat(p, 'g', 4, 64) // don't round across the threshold
	}
	return "p = " + s
}

// SecondsPM formats a mean duration ± its deviation in the mean's unit.
func SecondsPM(mean, sd float64) string {
	switch {
	case math.IsNaN(mean) || math.IsInf(mean, 0) || mean < 0 || mean >= 59.95:
		return Seconds(mean) + " ± " + Seconds(sd)
	case mean < 1:
		return Seconds(mean) + " ± " + strconv.FormatFloat(sd*1000, 'f', 0, 64) + "ms"
	}
	d := 1
	if sd < 0.095 {
		d = 2
	}
	return strconv.FormatFloat(mean, 'f', d, 64) + "s ± " + strconv.FormatFloat(sd, 'f', d, 64) + "s"
}

// Percent formats a rate in [0, 1] as a whole percentage.
func Percent(r float64) string {
	return strconv.FormatFloat(math.Round(r*100), 'f', 0, 64) + "%"
}

// Inert makes s safe to print on a terminal, keeping its lines: invalid
// UTF-8 becomes U+FFFD and every control character but tab and newline (ESC,
// BEL, CR, the rest of C0, DEL, the C1 controls) is written as its escape,
// "\x1b" or "\u009b", as Go's %q and Python's repr write it. A candidate's
// bytes then read as what they are, an attempt included, and none sets the
// title, moves the cursor or clears the screen. Caret notation (cat -v, gh's
// sanitizer) would serve too, but reads a C1 control as its C0 twin and "^["
// as text the candidate might have printed; dropping would hide the attempt.
func Inert(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if r != '\t' && r != '\n' && unicode.IsControl(r) {
			writeEscape(&b, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unsafeRune reports whether Inert changes r: a control character other than
// tab and newline, or invalid UTF-8.
func unsafeRune(r rune) bool {
	return r == utf8.RuneError || (r != '\t' && r != '\n' && unicode.IsControl(r))
}

// writeEscape writes control character r as Inert shows it.
func writeEscape(b *strings.Builder, r rune) {
	if r < 0x80 {
		fmt.Fprintf(b, `\x%02x`, r)
		return
	}
	fmt.Fprintf(b, `\u%04x`, r)
}

// OneLine makes s fit one table line: white space runs made one space (tab,
// newline, CR and the other spaces are layout there), zero-width spaces
// dropped, and the rest as Inert writes it.
func OneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case r == '\u200b':
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		if unicode.IsControl(r) {
			writeEscape(&b, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Shorten cuts s to at most n runes, ending in "…" when it cut.
func Shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := 0
	for range n - 1 {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	return strings.TrimRight(s[:cut], " ") + "…"
}

// markdownEscaper escapes what Markdown would read as markup or HTML.
var markdownEscaper = strings.NewReplacer(`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`, `|`, `\|`, `~`, `\~`,
	"<", "&lt;", ">", "&gt;", "&", "&amp;")

// Markdown escapes s for a Markdown table cell or paragraph.
func Markdown(s string) string { return markdownEscaper.Replace(OneLine(s)) }

// MarkdownCode writes s as an inline code span with a fence longer than any
// run of backticks in it; '|' is escaped so it cannot end a table cell.
func MarkdownCode(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + strings.ReplaceAll(s, "|", "\\|") + pad + fence
}

// TrimLines drops the trailing spaces tablewriter pads the last column with.
func TrimLines(b []byte) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<24)
	for sc.Scan() {
		out.Write(bytes.TrimRight(sc.Bytes(), " "))
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// ShellQuote quotes s so a POSIX shell gets it as one word, verbatim.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ShellQuoted is words, each ShellQuote'd, separated by spaces: a command
// line a POSIX shell splits back into exactly those words.
func ShellQuoted(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = ShellQuote(w)
	}
	return strings.Join(q, " ")
}

// ShellWord is s as a POSIX shell word for a command a user will read or
// paste: as it is when no shell treats it specially, else ShellQuote(s).
func ShellWord(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./,:=+@%", r)) {
			return ShellQuote(s)
		}
	}
	return s
}

// Bytes formats a size in IEC units: "512 B", "2.1 KiB", "3.0 MiB".
func Bytes(n float64) string {
	if n < 1024 {
		return strconv.FormatFloat(math.Round(n), 'f', 0, 64) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	v, u := n/1024, 0
	for !(v < 1024) && u < len(units)-1 { // NaN, too, goes to the last unit
		v, u = v/1024, u+1
	}
	decimals := 0
	if v < 10 {
		decimals = 1
	}
	return strconv.FormatFloat(v, 'f', decimals, 64) + " " + units[u]
}

// USD writes dollars: "$0", "$12", "$1.23", below a dollar two significant
// digits ("$0.042").
func USD(x float64) string {
	switch {
	case x == 0:
		return "$0"
	case x < 0:
		return "-" + USD(-x)
	case x >= 100:
		return "$" + strconv.FormatFloat(math.Round(x), 'f', 0, 64)
	case x >= 1:
		return "$" + strconv.FormatFloat(x, 'f', 2, 64)
	}
	d := max(2, 1-int(math.Floor(math.Log10(x))))
	return "$" + strconv.FormatFloat(x, 'f', d, 64)
}
