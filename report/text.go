package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/forge-run/forge/report/internal/text"
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

// num formats a score: "0.87", "3.2", "42", "1234".
func num(x float64) string {
	return strconv.FormatFloat(x, 'f', decimals(x), 64)
}

// numPM formats a value and its ± half-width with the value's decimals
// (or the half-width's when it needs more): "0.81 ± 0.04".
func numPM(x, pm float64) string {
	d := decimals(x)
	if pm != 0 {
		d = max(d, min(decimals(pm), 4))
	}
	return strconv.FormatFloat(x, 'f', d, 64) + " ± " + strconv.FormatFloat(pm, 'f', d, 64)
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

// secondsPM formats a mean runtime and its standard deviation in the mean's
// unit: "3.2s ± 0.3s", "450ms ± 20ms", "1m05s ± 12s".
func secondsPM(mean, sd float64) string {
	switch {
	case math.IsNaN(mean) || math.IsInf(mean, 0) || mean < 0 || mean >= 59.95:
		return seconds(mean) + " ± " + seconds(sd)
	case mean < 1:
		return seconds(mean) + " ± " + strconv.FormatFloat(sd*1000, 'f', 0, 64) + "ms"
	}
	d := 1
	if sd < 0.095 {
		d = 2
	}
	return strconv.FormatFloat(mean, 'f', d, 64) + "s ± " + strconv.FormatFloat(sd, 'f', d, 64) + "s"
}

// bytesHuman formats a size in IEC units: "512 B", "2.1 KiB", "3.0 MiB".
func bytesHuman(n float64) string {
	if n < 1024 {
		return strconv.FormatFloat(math.Round(n), 'f', 0, 64) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	v := n
	for _, u := range units {
		v /= 1024
		if v < 1024 || u == "TiB" {
			if v < 10 {
				return strconv.FormatFloat(v, 'f', 1, 64) + " " + u
			}
			return strconv.FormatFloat(v, 'f', 0, 64) + " " + u
		}
	}
	return "" // unreachable
}

// percent formats a rate in [0, 1] as a whole percentage.
func percent(r float64) string {
	return strconv.FormatFloat(math.Round(r*100), 'f', 0, 64) + "%"
}

// oneLine makes s fit on one line of a table: invalid UTF-8 becomes U+FFFD,
// runs of white space (newlines included) become one space, and other control
// characters (ANSI escapes a candidate printed) are dropped.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(text.StripANSI(s), "\uFFFD") {
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

// capText prepares captured output (stdout, stderr, an artifact) for a
// report: terminal escapes stripped, capped with a note, valid UTF-8.
func capText(s string, max int) string { return text.Output(s, max) }
