package compare

// Numbers and text are formatted with internal/text, as report does, so a
// comparison reads like the run reports it compares.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/scoring"
)

// signed formats a difference with its sign: "+0.05", "-0.29", "0.00".
func signed(x float64) string {
	s := text.Num(x)
	if x > 0 {
		return "+" + s
	}
	if strings.Trim(s, "-0.") == "" {
		return strings.TrimPrefix(s, "-") // -0.00 reads as no change
	}
	return s
}

// idWidth caps candidate and run ids in text output.
const idWidth = 40

// id prepares a candidate or run id for a line of text.
func id(s string) string {
	s = text.Shorten(text.OneLine(s), idWidth)
	if s == "" {
		return "—"
	}
	return s
}

// testText says how a change was judged: "p = 0.003", "single trial".
func testText(c Change) string {
	switch c.Test {
	case TestWelch:
		return text.P(c.Welch.PValue, scoring.Alpha)
	case TestSingleTrial:
		return "single trial"
	case TestNoScores:
		return "no scored trials"
	case TestPaired:
		return fmt.Sprintf("%s over %d tasks", text.P(c.Paired.PValue, scoring.Alpha), c.Paired.N)
	}
	return "—"
}

// maxTaskLines bounds how many changed tasks the table names per
// candidate.
const maxTaskLines = 10

// taskLines say, per candidate of a suite, which tasks got worse and which
// better: "alpha: 3 tasks worse, 1 better of 30 (paired t, p = 0.04)", then
// "  csv-3  1.00 → 0.00" per task, the most worsened first.
func taskLines(rep Report) []string {
	var out []string
	for _, c := range rep.Candidates {
		if c.Paired == nil || len(c.Tasks) == 0 {
			continue
		}
		worse := 0
		for _, t := range c.Tasks {
			if t.Delta < 0 {
				worse++
			}
		}
		out = append(out, fmt.Sprintf("%s: %d %s worse, %d better of %d (%s, %s)", id(c.CandidateID), worse,
			text.Plural(worse, "task", "tasks"), len(c.Tasks)-worse, c.Paired.N, scoring.MethodName(c.Paired.Method), text.P(c.Paired.PValue, scoring.Alpha)))
		for i, t := range c.Tasks {
			if i == maxTaskLines {
				out = append(out, fmt.Sprintf("  … %d more", len(c.Tasks)-maxTaskLines))
				break
			}
			line := fmt.Sprintf("  %s  %s → %s", id(t.TaskID), text.Score(t.Base), text.Score(t.Head))
			if t.Welch != nil {
				line += "  " + text.P(t.Welch.PValue, scoring.Alpha)
			}
			out = append(out, line)
		}
	}
	return out
}

// scoreText is a side's mean score as the standings write a score (two
// decimals), or "—" without one.
func scoreText(s *Side) string {
	if !s.scored() {
		return "—"
	}
	return text.Score(s.Score)
}

// deltaText is the score change, or "—" without one.
func deltaText(c Change) string {
	if c.ScoreDelta == nil {
		return "—"
	}
	return signed(*c.ScoreDelta)
}

// arrow is "base → head", each side as side writes it, then head over base
// ("×1.28") when there is a ratio.
func arrow(c Change, ratio *float64, side func(*Side) string) string {
	s := side(c.Base) + " → " + side(c.Head)
	if ratio != nil {
		s += " " + text.Ratio(*ratio)
	}
	return s
}

// runtimeText is "3.2s → 4.1s ×1.28", "— → 4.1s" for a new candidate.
func runtimeText(c Change) string {
	return arrow(c, c.RuntimeRatio, func(s *Side) string {
		if !s.timed() {
			return "—"
		}
		return text.Seconds(s.RuntimeMeanSeconds)
	})
}

// costText is "$0.012 → $0.0040 ×0.33", the mean cost of a trial, "—"
// for a side without a (fully priced) cost.
func costText(c Change) string {
	return arrow(c, c.CostRatio, func(s *Side) string {
		if s == nil || s.CostMeanUSD == nil {
			return "—"
		}
		return text.USD(*s.CostMeanUSD)
	})
}

// costed says some candidate has a cost on either side: the comparison
// shows a COST column.
func costed(r Report) bool {
	return slices.ContainsFunc(r.Candidates, func(c Change) bool {
		return (c.Base != nil && c.Base.CostMeanUSD != nil) || (c.Head != nil && c.Head.CostMeanUSD != nil)
	})
}

// successText is "100% → 80%".
func successText(c Change) string {
	return arrow(c, nil, func(s *Side) string {
		if s == nil || s.ended == 0 {
			return "—" // no trial ran to an end: no rate
		}
		return text.Percent(s.SuccessRate)
	})
}

// trialsText is "5 → 5".
func trialsText(c Change) string {
	return arrow(c, nil, func(s *Side) string {
		switch {
		case s == nil:
			return "—"
		case s.Unverified > 0:
			return fmt.Sprintf("%d (%d not verified)", s.Trials, s.Unverified)
		}
		return strconv.Itoa(s.Trials)
	})
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
	case *r.ManifestChanged && len(r.ChangedFiles) > 0:
		files := r.ChangedFiles
		if len(files) > 5 {
			files = append(files[:5:5], fmt.Sprintf("and %d more", len(r.ChangedFiles)-5))
		}
		return "changed: " + strings.Join(files, ", ")
	case *r.ManifestChanged:
		return "changed"
	}
	return "unchanged"
}

// testsText says how the changes were tested.
func testsText(r Report) string {
	if r.Tasks > 0 {
		return fmt.Sprintf("two-sided paired tests over the %d tasks both runs played", r.Tasks)
	}
	return "two-sided Welch t-test on trial scores"
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
