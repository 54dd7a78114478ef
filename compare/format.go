package compare

// The number and text formats below are report's (report/text.go), so a
// comparison reads like the run reports it compares. They are copied, not
// shared: report keeps them unexported.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/forge-run/forge/scoring"
)

// decimals is how many decimals x deserves: two significant digits for
// numbers below 10, none from 100 up, at most four.
func decimals(x float64) int {
	ax := math.Abs(x)
	if ax == 0 || math.IsNaN(ax) || math.IsInf(ax, 0) {
		return 2
	}
	d := 1 - int(math.Floor(math.Log10(ax)))
	return max(0, min(d, 4))
}

// num formats a score: "0.87", "3.2", "42".
func num(x float64) string {
	return strconv.FormatFloat(x, 'f', decimals(x), 64)
}

// signed formats a difference with its sign: "+0.05", "-0.29", "0.00".
func signed(x float64) string {
	s := num(x)
	if x > 0 {
		return "+" + s
	}
	if strings.Trim(s, "-0.") == "" {
		return strings.TrimPrefix(s, "-") // -0.00 reads as no change
	}
	return s
}

// seconds formats a duration given in seconds: "4.5ms", "450ms", "3.2s",
// "1m05s", "1h02m".
func seconds(s float64) string {
	switch {
	case math.IsNaN(s) || math.IsInf(s, 0):
		return "—"
	case s < 0:
		return "-" + seconds(-s)
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

// percent formats a rate in [0, 1] as a whole percentage.
func percent(r float64) string {
	return strconv.FormatFloat(math.Round(r*100), 'f', 0, 64) + "%"
}

// ratio formats a runtime ratio: "×1.28", "×0.50".
func ratio(r float64) string {
	return "×" + strconv.FormatFloat(r, 'f', 2, 64)
}

// pText formats a p-value as the standings do: "p = 0.079", "p < 0.001",
// never rounded across Alpha.
func pText(p float64) string {
	if p < 0.001 {
		return "p < 0.001"
	}
	s := strconv.FormatFloat(p, 'g', 2, 64)
	if f, _ := strconv.ParseFloat(s, 64); (f >= scoring.Alpha) != (p >= scoring.Alpha) {
		s = strconv.FormatFloat(p, 'g', 4, 64)
	}
	return "p = " + s
}

// oneLine makes s fit on one line of a table: invalid UTF-8 becomes U+FFFD,
// runs of white space become one space, and control characters (escape
// sequences in a hand-edited or hostile record) are dropped.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(stripANSI(s), "\uFFFD") {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.IsControl(r) || r == '\u200b':
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// stripANSI removes terminal escape sequences (CSI such as colours, OSC
// such as titles) so what is left reads as plain text; a lone ESC is left
// for oneLine to drop.
func stripANSI(s string) string {
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

// shorten cuts s to at most n runes, ending in "…" when it cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for j := range s {
		if count == n-1 {
			i = j
			break
		}
		count++
	}
	return strings.TrimRight(s[:i], " ") + "…"
}

// idWidth caps candidate and run ids in text output.
const idWidth = 40

// id prepares a candidate or run id for a line of text.
func id(s string) string {
	s = shorten(oneLine(s), idWidth)
	if s == "" {
		return "—"
	}
	return s
}

// mdText escapes s for a Markdown table cell or paragraph.
func mdText(s string) string {
	s = oneLine(s)
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '|', '~', '#':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// testText says how a change was judged: "p = 0.003", "single trial".
func testText(c Change) string {
	switch c.Test {
	case TestWelch:
		return pText(c.Welch.PValue)
	case TestSingleTrial:
		return "single trial"
	case TestNoScores:
		return "no scored trials"
	}
	return "—"
}

// scoreText is a side's mean score, or "—" without one.
func scoreText(s *Side) string {
	if !s.scored() {
		return "—"
	}
	return num(s.Score)
}

// deltaText is the score change, or "—" without one.
func deltaText(c Change) string {
	if c.ScoreDelta == nil {
		return "—"
	}
	return signed(*c.ScoreDelta)
}

// runtimeText is "3.2s → 4.1s ×1.28", "— → 4.1s" for a new candidate.
func runtimeText(c Change) string {
	side := func(s *Side) string {
		if !s.timed() {
			return "—"
		}
		return seconds(s.RuntimeMeanSeconds)
	}
	s := side(c.Base) + " → " + side(c.Head)
	if c.RuntimeRatio != nil {
		s += " " + ratio(*c.RuntimeRatio)
	}
	return s
}

// successText is "100% → 80%".
func successText(c Change) string {
	side := func(s *Side) string {
		if s == nil || s.ended == 0 {
			return "—" // no trial ran to an end: no rate
		}
		return percent(s.SuccessRate)
	}
	return side(c.Base) + " → " + side(c.Head)
}

// trialsText is "5 → 5".
func trialsText(c Change) string {
	side := func(s *Side) string {
		if s == nil {
			return "—"
		}
		return strconv.Itoa(s.Trials)
	}
	return side(c.Base) + " → " + side(c.Head)
}

// winnerText is "alpha → beta", "alpha (unchanged)", "none → alpha".
func winnerText(r Report) string {
	name := func(w *string) string {
		if w == nil {
			return "none"
		}
		return id(*w)
	}
	if !r.WinnerChanged {
		return name(r.Head.Winner) + " (unchanged)"
	}
	return name(r.Base.Winner) + " → " + name(r.Head.Winner)
}

// manifestText says whether the manifest changed.
func manifestText(r Report) string {
	switch {
	case r.ManifestChanged == nil:
		return "unknown (a run records no manifest hash)"
	case *r.ManifestChanged:
		return "changed"
	}
	return "unchanged"
}

// tally is "1 improved, 1 regressed, 2 unchanged".
func tally(r Report) string {
	n := map[Status]int{}
	for _, c := range r.Candidates {
		n[c.Status]++
	}
	var parts []string
	for _, s := range []Status{StatusImproved, StatusRegressed, StatusUnchanged, StatusNew, StatusGone} {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	if len(parts) == 0 {
		return "no candidates"
	}
	return strings.Join(parts, ", ")
}

// when is a run's start as "2026-11-21 15:30" UTC, the clock run ids use.
func when(t time.Time) string {
	if t.IsZero() {
		return "????-??-?? ??:??"
	}
	return t.UTC().Format("2006-01-02 15:04")
}
