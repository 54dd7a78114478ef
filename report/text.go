package report

import (
	"math"
	"strconv"

	"github.com/forge-run/forge/internal/text"
)

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
