package scoring

// The verdict: who won, by how much, and the winner line that says so.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

// contenders are rank 1 and rank 2 of the ranked candidates es (second nil
// when only one has results), or why none can win.
func contenders(es []*tally) (top, second *tally, noWinner string) {
	switch {
	case len(es) == 0 || es[0].trials == 0: // those with results rank first
		return nil, nil, "no winner: no results"
	case !slices.ContainsFunc(es, func(e *tally) bool { return e.successes > 0 }):
		return nil, nil, "no winner: no candidate succeeded"
	}
	if len(es) > 1 && es[1].trials > 0 {
		second = es[1]
	}
	return es[0], second, ""
}

// rankOne names the candidates ranked first (several when tied).
func rankOne(es []*tally) []string {
	var names []string
	for _, e := range es {
		if e.st.Rank == 1 {
			names = append(names, e.id)
		}
	}
	return names
}

// decide names the winner, if any, and says why.
func decide(es []*tally) (*string, string, *record.Comparison) {
	top, second, noWinner := contenders(es)
	if noWinner != "" {
		return nil, noWinner, nil
	}
	if second == nil { // it succeeded: contenders says so
		line := fmt.Sprintf("winner: %s %s, the only candidate", top.id, scoreText(top.st))
		if top.sum.n < 2 {
			line += singleTrial
		}
		return &top.id, line, nil
	}
	c := comparison(top, second, nil)
	if top.successes == 0 {
		return nil, fmt.Sprintf("no winner: %s ranks first but never succeeded", top.id), c
	}
	if top.st.Tied {
		names := rankOne(es)
		if c.Method == "exact" {
			return nil, fmt.Sprintf("no clear winner: %s tie at %s%s", text.AndList(names), text.Score(top.st.Score), singleTrial), c
		}
		return nil, fmt.Sprintf("no clear winner: %s overlap (%s vs %s, %s)", text.AndList(names),
			top.st.ScoreText(), second.st.ScoreText(), pText(c.PValue)), c
	}
	line := fmt.Sprintf("winner: %s %s, ", top.id, scoreText(top.st))
	if c.Ratio > 0 {
		line += text.Ratio(c.Ratio) + " " + c.Second
	} else {
		line += fmt.Sprintf("over %s (%s)", c.Second, text.Score(c.SecondScore))
	}
	if c.PValue != nil {
		line += ", " + pText(c.PValue)
	} else {
		line += singleTrial
	}
	return &top.id, line, c
}

// decideSuite names a suite's winner by the paired test of rank 1 and rank 2.
func decideSuite(es []*tally, tasks []Task) (*string, string, *record.Comparison) {
	top, second, noWinner := contenders(es)
	if noWinner != "" {
		return nil, noWinner, nil
	}
	over := fmt.Sprintf("%s %s over %d %s", top.id, top.st.ScoreText(), top.st.Suite.Tasks, text.Plural(top.st.Suite.Tasks, "task", "tasks"))
	if second == nil {
		return &top.id, "winner: " + over + ", the only candidate", nil
	}
	c := comparison(top, second, tasks)
	record := fmt.Sprintf("beats %s on %d, loses %d, ties %d (%s, %s)", second.id, c.Wins, c.Losses, c.Ties,
		MethodName(c.Method), pText(c.PValue))
	if top.successes == 0 {
		return nil, fmt.Sprintf("no winner: %s ranks first but never succeeded", top.id), c
	}
	if top.st.Tied {
		return nil, fmt.Sprintf("no clear winner: %s tie over %s (%s vs %s): %s; %s %s", text.AndList(rankOne(es)),
			text.Count(c.Tasks, "task", "tasks"), top.st.ScoreText(), second.st.ScoreText(), TieReason(c), top.id, record), c
	}
	return &top.id, "winner: " + over + "; " + record, c
}

// minSignedRank is the fewest tasks on which two candidates differ that a
// two-sided Wilcoxon signed-rank test at Alpha can ever tell apart.
const minSignedRank = 6

// TieReason says why c's two candidates tie: too few tasks differ between
// them for any result to tell them apart, or the difference is within
// the noise.
func TieReason(c *record.Comparison) string {
	if c.Method == MethodWilcoxon && c.Wins+c.Losses < minSignedRank {
		return fmt.Sprintf("too few tasks to tell them apart (they differ on %d; it takes %d)", c.Wins+c.Losses, minSignedRank)
	}
	return "a difference within the noise"
}

// MethodName names a comparison method for people: "paired t".
func MethodName(method string) string {
	name := map[string]string{MethodPairedT: "paired t", MethodWilcoxon: "Wilcoxon signed-rank", "welch-t": "Welch t"}[method]
	return cmp.Or(name, method)
}

const singleTrial = " (single trial; use --trials N for confidence)"

// comparison is the test of rank 1 (best) against rank 2: compareMeans over
// their trials or, in a suite, ComparePaired over the tasks both played.
func comparison(best, second *tally, tasks []Task) *record.Comparison {
	var c record.Comparison
	if len(tasks) > 0 {
		pt, err := ComparePaired(pairedTasks(best, second, tasks))
		c = record.Comparison{Method: pt.Method, Difference: pt.MeanDifference, DifferenceCI95: pt.DifferenceCI95,
			Clear: !best.st.Tied, Tasks: pt.N, Wins: pt.Wins, Losses: pt.Losses, Ties: pt.Ties}
		if pt.Method == MethodPairedT && pt.Statistic != nil {
			c.T, c.DF = pt.Statistic, new(float64(pt.N-1))
		}
		if err == nil {
			c.PValue = new(pt.PValue)
		}
	} else {
		r := compareMeans(best.sum, second.sum)
		c = record.Comparison{Method: r.method, Difference: r.diff, DifferenceCI95: r.diffCI, PValue: r.p, Clear: r.clear, DF: r.df}
		if r.t != nil && !math.IsInf(*r.t, 0) && !math.IsNaN(*r.t) {
			c.T = r.t
		}
	}
	c.Best, c.BestScore = best.id, best.st.Score
	c.Second, c.SecondScore = second.id, second.st.Score
	c.Alpha = Alpha
	if second.st.Score > 0 {
		c.Ratio = best.st.Score / second.st.Score
	}
	return &c
}

// incompleteLine is the winner line of a run that could not judge every
// candidate, those with the same reason together. A candidate that played
// some of a suite's tasks (of tasks) did run: it did not run every task (the
// reason names the ones it did not).
func incompleteLine(us []record.Unjudged, tasks int) string {
	var reasons []string
	byReason := map[string][]string{}
	someTasks := map[string]bool{}
	for _, u := range us {
		if _, ok := byReason[u.Reason]; !ok {
			reasons = append(reasons, u.Reason)
		}
		byReason[u.Reason] = append(byReason[u.Reason], u.CandidateID)
		someTasks[u.Reason] = len(u.TaskIDs) > 0 && len(u.TaskIDs) < tasks
	}
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		what := "did not run"
		if someTasks[r] {
			what = "did not run every task"
		}
		parts[i] = fmt.Sprintf("%s %s (%s)", text.AndList(byReason[r]), what, r)
	}
	return "incomplete: " + strings.Join(parts, "; ")
}

// scoreText is "(0.81 ± 0.04)" with an interval, "(0.81)" without.
func scoreText(st record.Standing) string { return "(" + st.ScoreText() + ")" }

// pText formats a p-value as text.P does, or "no test".
func pText(p *float64) string {
	if p == nil {
		return "no test"
	}
	return text.P(*p, Alpha)
}
