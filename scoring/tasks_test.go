package scoring

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// onTask is r played on task.
func onTask(r record.Trial, task string) record.Trial {
	r.TaskID = task
	return r
}

func suiteOf(candidates []string, n int) Suite {
	s := Suite{Candidates: candidates}
	for i := 1; i <= n; i++ {
		s.Tasks = append(s.Tasks, Task{ID: fmt.Sprintf("t%02d", i)})
	}
	return s
}

// TestSuiteNormalisesWithinTasks: runtime is compared among a task's
// trials only, so a task that is slow for everyone costs nobody.
func TestSuiteNormalisesWithinTasks(t *testing.T) {
	s := suiteOf([]string{"a", "b"}, 2)
	results := []record.Trial{
		onTask(ok("a", 1, 1), "t01"), onTask(ok("b", 1, 2), "t01"),
		onTask(ok("a", 1, 100), "t02"), onTask(ok("b", 1, 50), "t02"),
	}
	o := ScoreSuite(DefaultConfig(), s, results)
	// a is fastest on t01 (1.0) and slowest on t02 (1/1.2); b the other way.
	for _, r := range scored(results, o) {
		fastest := (r.CandidateID == "a") == (r.TaskID == "t01")
		want := 1 / 1.2
		if fastest {
			want = 1
		}
		if math.Abs(*r.Score-want) > 1e-12 {
			t.Errorf("%s on %s scored %v, want %v", r.CandidateID, r.TaskID, *r.Score, want)
		}
	}
	a, b := standing(t, o, "a"), standing(t, o, "b")
	if a.Score != b.Score || a.Rank != 1 || b.Rank != 1 || !a.Tied {
		t.Errorf("a %+v\nb %+v", a, b)
	}
}

// TestSuiteScoreIsWeightedMeanOfTasks checks the suite score, solved
// tasks, pass@k and the per-task matrix.
func TestSuiteScoreIsWeightedMeanOfTasks(t *testing.T) {
	s := Suite{Candidates: []string{"a"}, Tasks: []Task{{ID: "easy", Weight: 3}, {ID: "hard"}}, PassAtK: 2}
	results := []record.Trial{
		onTask(ok("a", 1, 1), "easy"), onTask(ok("a", 2, 1), "easy"), onTask(ok("a", 3, 1), "easy"),
		onTask(ok("a", 1, 1), "hard"), onTask(failed("a", 2, runner.ErrCandidateFailed), "hard"),
		onTask(failed("a", 3, runner.ErrTimeout), "hard"),
	}
	o := ScoreSuite(Config{Scorers: []Scorer{{Type: TypeSuccess}}}, s, results)
	a := standing(t, o, "a")
	// easy 1 (weight 3), hard 1/3 (weight 1): (3 + 1/3) / 4.
	if want := (3 + 1.0/3) / 4; math.Abs(a.Score-want) > 1e-12 {
		t.Errorf("score %v, want %v", a.Score, want)
	}
	// pass@2 on hard: 1 - C(2,2)/C(3,2) = 2/3; on easy 1: (3·1 + 2/3) / 4.
	if a.Suite == nil || a.Suite.Tasks != 2 || a.Suite.Solved != 1 || a.Suite.K != 2 ||
		a.Suite.PassAtK == nil || math.Abs(*a.Suite.PassAtK-(3+2.0/3)/4) > 1e-12 {
		t.Errorf("suite = %+v (pass@k %v)", a.Suite, a.Suite.PassAtK)
	}
	if a.ScoreCI95[0] < 0 || a.ScoreCI95[1] > 1 || a.ScoreCI95[0] > a.Score || a.ScoreCI95[1] < a.Score {
		t.Errorf("interval %v around %v", a.ScoreCI95, a.Score)
	}
	if len(o.Tasks) != 2 || o.Tasks[0].TaskID != "hard" || !o.Tasks[1].Cells[0].Solved || o.Tasks[0].Cells[0].Successes != 1 {
		t.Errorf("matrix = %+v", o.Tasks)
	}
	if !strings.HasPrefix(o.WinnerLine, "winner: a ") || !strings.Contains(o.WinnerLine, "over 2 tasks, the only candidate") {
		t.Errorf("winner line %q", o.WinnerLine)
	}
}

// TestSuiteWinnerIsPaired: b is a little worse than a on every one of 12
// tasks. Compared as two samples of task scores the means overlap (the
// tasks' difficulty varies far more than the gap); paired task by task,
// a wins every one.
func TestSuiteWinnerIsPaired(t *testing.T) {
	s := suiteOf([]string{"a", "b"}, 12)
	var results []record.Trial
	for i, task := range s.Tasks {
		base := 0.1 + 0.07*float64(i)
		results = append(results,
			onTask(judged("a", 1, base+0.05, ""), task.ID),
			onTask(judged("b", 1, base, ""), task.ID))
	}
	o := ScoreSuite(judgeOnly, s, results)
	if o.Winner == nil || *o.Winner != "a" {
		t.Fatalf("winner %v: %s", o.Winner, o.WinnerLine)
	}
	if !strings.Contains(o.WinnerLine, "over 12 tasks; beats b on 12, loses 0, ties 0 (") {
		t.Errorf("winner line %q", o.WinnerLine)
	}
	c := o.Comparison
	if c == nil || c.Tasks != 12 || c.Wins != 12 || !c.Clear || c.PValue == nil || *c.PValue >= Alpha ||
		math.Abs(c.Difference-0.05) > 1e-9 {
		t.Errorf("comparison %+v", c)
	}
	if welch := compareMeans(summarize(standingTaskMeans(o, "a")), summarize(standingTaskMeans(o, "b"))); welch.clear {
		t.Errorf("the unpaired test should not tell them apart here (p = %v): the test would not show pairing", *welch.p)
	}
	if h := o.HeadToHead; len(h) != 1 || h[0] != (record.HeadToHead{A: "a", B: "b", WinLoss: record.WinLoss{Wins: 12}}) {
		t.Errorf("head to head %+v", h)
	}
}

func standingTaskMeans(o Outcome, id string) []float64 {
	var xs []float64
	for _, row := range o.Tasks {
		for _, c := range row.Cells {
			if c.CandidateID == id && c.Score != nil {
				xs = append(xs, *c.Score)
			}
		}
	}
	return xs
}

// TestSuiteTieStaysTie: a and b trade wins task by task; no winner.
func TestSuiteTieStaysTie(t *testing.T) {
	s := suiteOf([]string{"a", "b"}, 10)
	var results []record.Trial
	for i, task := range s.Tasks {
		hi, lo := 0.8, 0.6
		if i%2 == 1 {
			hi, lo = lo, hi
		}
		results = append(results, onTask(judged("a", 1, hi, ""), task.ID), onTask(judged("b", 1, lo, ""), task.ID))
	}
	o := ScoreSuite(judgeOnly, s, results)
	if o.Winner != nil || !strings.HasPrefix(o.WinnerLine, "no clear winner: a and b tie over 10 tasks") ||
		!strings.Contains(o.WinnerLine, "beats b on 5, loses 5, ties 0") {
		t.Errorf("winner %v, line %q", o.Winner, o.WinnerLine)
	}
}

// TestSuiteIncomplete: a task on which a candidate never ran to an end
// leaves the standings incomplete; the line tells a candidate that ran
// some tasks from one that ran none.
func TestSuiteIncomplete(t *testing.T) {
	s := suiteOf([]string{"a", "b", "c"}, 2)
	results := []record.Trial{
		onTask(ok("a", 1, 1), "t01"), onTask(ok("b", 1, 1), "t01"), onTask(failed("c", 1, runner.ErrInfra), "t01"),
		onTask(ok("a", 1, 1), "t02"), onTask(failed("b", 1, runner.ErrInfra), "t02"), onTask(failed("c", 1, runner.ErrInfra), "t02"),
	}
	o := ScoreSuite(DefaultConfig(), s, results)
	if o.Winner != nil || len(o.Incomplete) != 2 || o.Incomplete[0].CandidateID != "b" ||
		len(o.Incomplete[0].TaskIDs) != 1 || o.Incomplete[0].TaskIDs[0] != "t02" ||
		o.WinnerLine != "incomplete: b did not run every task (t02: infra: boom); c did not run (t01, t02: infra: boom)" {
		t.Errorf("incomplete %+v, line %q", o.Incomplete, o.WinnerLine)
	}
}

// TestUnplayedTasksAreNotTheHardest: a task no trial of which was scored (an
// interrupted suite's) is listed after the played ones, marked, never as
// the hardest with a mean of 0.
func TestUnplayedTasksAreNotTheHardest(t *testing.T) {
	ok := func(c, task string, score float64) record.Trial {
		return record.Trial{Result: runner.Result{CandidateID: c, TaskID: task, Trial: 1, Success: true, ExitCode: new(0), Submitted: map[string]any{"v": score}}}
	}
	cancelled := func(c, task string) record.Trial {
		return record.Trial{Result: runner.Result{CandidateID: c, TaskID: task, Trial: 1, ErrorKind: runner.ErrCancelled}}
	}
	cfg := Config{Scorers: []Scorer{{Type: TypeSubmitted, Field: "v", Normalize: NormRaw}}}
	suite := Suite{Candidates: []string{"a", "b"}, Tasks: []Task{{ID: "zz-unplayed"}, {ID: "easy"}, {ID: "hard"}}}
	out := ScoreSuite(cfg, suite, []record.Trial{
		ok("a", "easy", 1), ok("b", "easy", 1), ok("a", "hard", 0.2), ok("b", "hard", 0.4), cancelled("a", "zz-unplayed"), cancelled("b", "zz-unplayed"),
	})
	var ids []string
	for _, row := range out.Tasks {
		ids = append(ids, row.TaskID)
	}
	if want := []string{"hard", "easy", "zz-unplayed"}; !slices.Equal(ids, want) {
		t.Errorf("rows %v, want %v", ids, want)
	}
	if last := out.Tasks[len(out.Tasks)-1]; !last.Unscored || out.Tasks[0].Unscored {
		t.Errorf("unscored flags: %+v", out.Tasks)
	}
}
