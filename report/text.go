package report

import (
	"math"
	"strconv"

	"github.com/forge-run/forge/internal/text"
)

// numPM formats a value and its ± half-width with the value's decimals
// (or the half-width's when it needs more): "0.81 ± 0.04".
func numPM(x, pm float64) string {
	d := text.Decimals(x)
	if pm != 0 {
		d = max(d, min(text.Decimals(pm), 4))
	}
	return strconv.FormatFloat(x, 'f', d, 64) + " ± " + strconv.FormatFloat(pm, 'f', d, 64)
}

// secondsPM formats a mean runtime and its standard deviation in the mean's
// unit: "3.2s ± 0.3s", "450ms ± 20ms", "1m05s ± 12s".
func secondsPM(mean, sd float64) string {
	switch {
	case math.IsNaN(mean) || math.IsInf(mean, 0) || mean < 0 || mean >= 59.95:
		return text.Seconds(mean) + " ± " + text.Seconds(sd)
	case mean < 1:
		return text.Seconds(mean) + " ± " + strconv.FormatFloat(sd*1000, 'f', 0, 64) + "ms"
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

// capText prepares captured output (stdout, stderr, an artifact) for a
// report: terminal escapes stripped, capped with a note, valid UTF-8.
func capText(s string, max int) string { return text.Output(s, max) }
