package scoring

// Suites: every candidate plays every task (doc.go, "Suites").

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
)

// Task is a suite's task as scoring sees it.
type Task struct {
	ID string
	// Weight is the task's weight in suite scores; 0 means 1.
	Weight float64
	// Fields are the task's fields, which task-aware checks compare with.
	Fields map[string]any
	// PassMark is the score that solves the task; nil for 1.
	PassMark *float64
}

func (t Task) weight() float64 {
	if t.Weight > 0 && !math.IsInf(t.Weight, 0) {
		return t.Weight
	}
	return 1
}

// Suite is what a run played: its candidates and, for a suite, its tasks.
// PassAtK is the k of pass@k (0 means 1).
type Suite struct {
	Candidates []string
	Tasks      []Task
	PassAtK    int
}

// taskTally is one candidate's trials on one task.
type taskTally struct {
	scores                    []float64
	trials, successes, passes int
	unscored                  []noteHit // infra, auth, cancelled
	unverified                int       // verify_failed
}

// Passed reports whether a scored trial passed its task: success, and a
// score that reaches the task's pass mark (full score by default).
func Passed(r record.Trial) bool {
	return passed(r.Success, r.Score, r.PassMark)
}

// passed is Passed of a trial's parts.
func passed(success bool, score, passMark *float64) bool {
	return success && score != nil && *score >= record.MarkOf(passMark)-tieEpsilon
}

// suiteStats completes a suite candidate's standing from its task tallies.
func (t *tally) suiteStats(tasks []Task, k int) {
	var means []float64
	var ts []TaskScore
	su := &record.SuiteStanding{K: k}
	var pass, passW float64
	for _, task := range tasks {
		tt := t.tasks[task.ID]
		if tt == nil {
			continue
		}
		if len(tt.scores) > 0 {
			m := summarize(tt.scores).mean
			means = append(means, m)
			ts = append(ts, TaskScore{Score: clamp01(m), Weight: task.weight()})
		}
		if tt.trials > 0 && tt.passes == tt.trials {
			su.Solved++
		}
		if ran := tt.trials - len(tt.unscored) - tt.unverified; ran >= k {
			pass += task.weight() * PassAtK(ran, tt.passes, k)
			passW += task.weight()
		}
	}
	su.Tasks = len(means)
	if c := t.st.Cost; c != nil && su.Solved > 0 && c.PerSuccessUSD != nil {
		c.PerSolvedUSD = new(c.USD / float64(su.Solved))
	}
	if passW > 0 {
		su.PassAtK = new(pass / passW)
	}
	st := &t.st
	st.Suite = su
	sum, err := SummarizeTasks(ts)
	if err != nil { // only when no task has a score: every score is in [0, 1], every weight positive
		return
	}
	st.Score = sum.Mean
	st.ScoreStddev = summarize(means).sd
	st.ScoreCI95 = [2]float64{sum.Mean, sum.Mean}
	if sum.CI95 != nil {
		st.ScoreCI95 = *sum.CI95
	}
	t.sum = summary{n: len(means), mean: st.Score, sd: st.ScoreStddev}
}

// pairedTasks are a's and b's scores on their common tasks, in task order.
func pairedTasks(a, b *tally, tasks []Task) (xa, xb []float64) {
	for _, task := range tasks {
		ta, tb := a.tasks[task.ID], b.tasks[task.ID]
		if ta == nil || tb == nil || len(ta.scores) == 0 || len(tb.scores) == 0 {
			continue
		}
		xa = append(xa, summarize(ta.scores).mean)
		xb = append(xb, summarize(tb.scores).mean)
	}
	return xa, xb
}

// taskRows is the per-task matrix, hardest first (lowest mean, widest
// spread, id), the tasks without a scored trial last.
func taskRows(es []*tally, tasks []Task) []record.TaskRow {
	rows := make([]record.TaskRow, 0, len(tasks))
	for _, task := range tasks {
		row := record.TaskRow{TaskID: task.ID, Weight: task.weight()}
		var scores []float64
		for _, e := range es {
			c := record.TaskCell{CandidateID: e.id}
			if tt := e.tasks[task.ID]; tt != nil {
				c.Trials, c.Successes, c.Passes = tt.trials, tt.successes, tt.passes
				c.Solved = tt.trials > 0 && tt.passes == tt.trials
				if len(tt.scores) > 0 {
					m := summarize(tt.scores).mean
					c.Score = &m
					scores = append(scores, m)
				}
			}
			row.Cells = append(row.Cells, c)
		}
		s := summarize(scores)
		row.Mean, row.Spread, row.Unscored = s.mean, s.sd, len(scores) == 0
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Unscored != b.Unscored {
			return b.Unscored
		}
		if math.Abs(a.Mean-b.Mean) > tieEpsilon {
			return a.Mean < b.Mean
		}
		if math.Abs(a.Spread-b.Spread) > tieEpsilon {
			return a.Spread > b.Spread
		}
		return a.TaskID < b.TaskID
	})
	return rows
}

// headToHead compares every pair of candidates with results over common tasks.
func headToHead(es []*tally, tasks []Task) []record.HeadToHead {
	var out []record.HeadToHead
	for i, a := range es {
		for _, b := range es[i+1:] {
			if a.trials == 0 || b.trials == 0 {
				continue
			}
			p, _ := ComparePaired(pairedTasks(a, b, tasks)) // without common tasks: none won, lost or tied
			out = append(out, record.HeadToHead{A: a.id, B: b.id, WinLoss: p.WinLoss})
		}
	}
	return out
}

// unjudgedTasks lists the candidates with a task on which no trial ran to an
// end they are answerable for, and how the first ended.
func unjudgedTasks(es []*tally, tasks []Task) []record.Unjudged {
	var out []record.Unjudged
	for _, e := range es {
		var missing []string
		reason := ""
		for _, task := range tasks {
			tt := e.tasks[task.ID]
			if tt != nil && tt.trials > len(tt.unscored) {
				continue
			}
			missing = append(missing, task.ID)
			if reason == "" {
				reason = "no results"
				if tt != nil && len(tt.unscored) > 0 {
					reason = firstHit(tt.unscored).msg
				}
			}
		}
		if len(missing) == 0 {
			continue
		}
		what := fmt.Sprintf("%d of %d tasks", len(missing), len(tasks))
		if len(missing) <= 3 {
			what = strings.Join(missing, ", ")
		}
		out = append(out, record.Unjudged{CandidateID: e.id, TaskIDs: missing,
			Reason: what + ": " + text.Shorten(text.OneLine(reason), 100)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CandidateID < out[j].CandidateID })
	return out
}

// pairedTied reports whether the paired test cannot tell b from a.
func pairedTied(a, b *tally, tasks []Task) bool {
	xa, xb := pairedTasks(a, b, tasks)
	if len(xa) == 0 {
		return math.Abs(a.sum.mean-b.sum.mean) <= tieEpsilon
	}
	p, err := ComparePaired(xa, xb)
	return err != nil || !p.Significant
}
