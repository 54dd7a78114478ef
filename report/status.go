package report

// What a trial's end is called, the same in the table, the reports and
// the viewer: ok, wrong (a check failed, or less than full reward), or why
// it failed.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

// TrialStatus is the word for r's end and its health (the CSS class):
// "ok"/ok, "wrong"/partial, or KindLabel/failed.
func TrialStatus(r *record.Trial) (status, health string) {
	switch {
	case !r.Success:
		return KindLabel(r.ErrorKind), "failed"
	case r.Wrong():
		return "wrong", "partial"
	}
	return "ok", "ok"
}

// WrongText says why a wrong trial is wrong: its first failed check's
// wanted and got (and which check), or its reward; with its score.
func WrongText(r *record.Trial) string {
	why := ""
	for _, c := range r.Checks {
		if len(c.Failed) > 0 {
			f := c.Failed[0]
			// The values first: a note cut short still shows them.
			// A value is quoted; what a check describes ("matches …", "12
			// bytes", "none") is not.
			want, got := text.Shorten(text.OneLine(f.Want), 80), quoted(f.Got)
			if strings.Contains(f.Check, "equals") {
				want = quoted(f.Want)
			}
			if strings.HasPrefix(f.Check, "bytes") || f.Got == "none" {
				got = f.Got
			}
			why = fmt.Sprintf("wanted %s, got %s (%s", want, got, f.Check)
			if n := c.Of - c.Passed; n > 1 {
				why += fmt.Sprintf("; %d of %d checks failed", n, c.Of)
			}
			why += ")"
			break
		}
		if c.Passed < c.Of {
			why = fmt.Sprintf("%s: %d of %d checks passed", c.Name, c.Passed, c.Of)
			break
		}
	}
	if why == "" && r.Reward != nil {
		why = "reward " + strconv.FormatFloat(*r.Reward, 'g', 4, 64)
	}
	if r.Score != nil {
		why += " (score " + text.Score(*r.Score) + ")"
	}
	return why
}

// quoted is a value as a note shows it: short, on one line, in quotes.
func quoted(v string) string {
	v = text.Shorten(text.OneLine(v), 80)
	if v == "" {
		return `""`
	}
	return strconv.Quote(v)
}
