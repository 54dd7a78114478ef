package report

import (
	"github.com/forge-run/forge/internal/text"
)

// capText prepares captured output (stdout, stderr, an artifact) for a
// report: terminal escapes stripped, capped with a note, valid UTF-8.
func capText(s string, max int) string { return text.Output(s, max) }
