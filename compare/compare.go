package compare

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/scoring"
)

// Status is what happened to a candidate between the base run and the head
// run.
type Status string

// The statuses of a Change.
const (
	// StatusImproved: the head's mean score is significantly higher.
	StatusImproved Status = "improved"
	// StatusRegressed: the head's mean score is significantly lower.
	StatusRegressed Status = "regressed"
	// StatusUnchanged: no significant change, or too few trials to tell.
	StatusUnchanged Status = "unchanged"
	// StatusNew: the candidate is only in the head run.
	StatusNew Status = "new"
	// StatusGone: the candidate is only in the base run.
	StatusGone Status = "gone"
)

// Test names how a Change's significance was judged.
type Test string

// The tests.
const (
	// TestWelch is Welch's unequal-variances t-test on the per-trial scores,
	// two-sided at scoring.Alpha.
	TestWelch Test = "welch-t"
	// TestSingleTrial: one side has a single scored trial, so there is no
	// variance to judge the change against; nothing is significant.
	TestSingleTrial Test = "single-trial"
	// TestNoScores: one side has no scored trial at all.
	TestNoScores Test = "no-scored-trials"
	// TestNone: the candidate is in one run only.
	TestNone Test = "none"
	// TestPaired: both runs are suites; the change is judged by the paired
	// test over their common tasks (Paired says which).
	TestPaired Test = "paired"
)

// Run identifies one side of the comparison.
type Run struct {
	RunID        string    `json:"run_id"`
	Objective    string    `json:"objective"`
	Backend      string    `json:"backend"`
	StartedAt    time.Time `json:"started_at"`
	ManifestHash string    `json:"manifest_hash"`
	Interrupted  bool      `json:"interrupted"`
	Winner       *string   `json:"winner"`
}

// Side is one candidate's figures in one run.
type Side struct {
	// Rank is the candidate's rank in that run's standings; 0 when the
	// record has results for it but no standing.
	Rank int `json:"rank"`
	// Score is the mean score over the scored trials (the standing's).
	Score        float64 `json:"score"`
	ScoredTrials int     `json:"scored_trials"`
	Trials       int     `json:"trials"`
	Successes    int     `json:"successes"`
	SuccessRate  float64 `json:"success_rate"`
	// RuntimeMeanSeconds is over the successful trials; 0 when none.
	RuntimeMeanSeconds float64 `json:"runtime_mean_seconds"`
	// CostMeanUSD is the mean cost of a trial, when every costed trial
	// was fully priced; null otherwise.
	CostMeanUSD *float64 `json:"cost_mean_usd,omitempty"`
	// Unverified are the trials their task's verifier could not judge:
	// the task's failures, apart from the candidate's.
	Unverified int `json:"unverified,omitempty"`
	// scores are the per-trial scores the test uses.
	scores []float64
	// ended counts the trials that ran to an end (not infra, auth or
	// cancelled): the success rate's denominator.
	ended int
	// tasks are a suite's trial scores by task.
	tasks map[string][]float64
}

// scored reports whether the side has a score to compare.
func (s *Side) scored() bool { return s != nil && s.ScoredTrials > 0 }

// timed reports whether the side has a runtime to compare.
func (s *Side) timed() bool { return s != nil && s.Successes > 0 }

// Change is what happened to one candidate between the two runs.
type Change struct {
	CandidateID string `json:"candidate_id"`
	Status      Status `json:"status"`
	// Base and Head are null when the candidate is not in that run.
	Base *Side `json:"base"`
	Head *Side `json:"head"`
	// ScoreDelta is Head.Score - Base.Score; null unless both sides have
	// scored trials.
	ScoreDelta *float64 `json:"score_delta"`
	// RuntimeDeltaSeconds is head minus base mean runtime and RuntimeRatio
	// head over base; null unless both sides have successful trials.
	RuntimeDeltaSeconds *float64 `json:"runtime_delta_seconds"`
	RuntimeRatio        *float64 `json:"runtime_ratio"`
	// CostRatio is head over base mean cost per trial; null unless both
	// are priced (and base's is not 0).
	CostRatio *float64 `json:"cost_ratio,omitempty"`
	// Test says how significance was judged; Welch holds the test itself
	// when Test is "welch-t" (its difference is head minus base).
	Test  Test                 `json:"test"`
	Welch *scoring.WelchResult `json:"welch,omitempty"`
	// Paired holds the test when Test is "paired": head minus base, task
	// by task over the tasks both runs played. Tasks lists the tasks whose
	// score changed, most worsened first.
	Paired *scoring.PairedResult `json:"paired,omitempty"`
	Tasks  []TaskChange          `json:"tasks,omitempty"`
	// Significant is true when the score changed at level scoring.Alpha.
	Significant bool `json:"significant"`
}

// TaskChange is what happened to one candidate on one task of a suite.
type TaskChange struct {
	TaskID string `json:"task_id"`
	// Base and Head are the task scores (mean of the scored trials).
	Base  float64 `json:"base"`
	Head  float64 `json:"head"`
	Delta float64 `json:"delta"`
	// Welch is the test of the task's trials, when both runs have at least
	// two scored trials of it; Significant is its verdict.
	Welch       *scoring.WelchResult `json:"welch,omitempty"`
	Significant bool                 `json:"significant"`
}

// Report is the comparison of a base run with a head run.
type Report struct {
	Base Run `json:"base"`
	Head Run `json:"head"`
	// ManifestChanged compares the runs' manifest hashes; null when either
	// run does not record one.
	ManifestChanged *bool `json:"manifest_changed"`
	// ChangedFiles name what changed when the manifest's hash did and both
	// runs recorded their files: "path", "path (added)", "path (removed)".
	ChangedFiles  []string `json:"changed_files,omitempty"`
	WinnerChanged bool     `json:"winner_changed"`
	// Alpha is the significance level of every test (0.05).
	Alpha float64 `json:"alpha"`
	// Tasks, when both runs are suites, is how many tasks both played: the
	// candidates are then compared task by task over them.
	Tasks int `json:"tasks,omitempty"`
	// Candidates are in the head's standings order, then the base-only ones
	// in the base's order.
	Candidates []Change `json:"candidates"`
	// Notes say what makes the comparison less than like for like:
	// different objectives or backends, interrupted runs.
	Notes []string `json:"notes"`
}

// changedFiles lists what differs between two runs' files, in path order;
// nil when either run recorded none.
func changedFiles(base, head map[string]string) []string {
	if base == nil || head == nil {
		return nil
	}
	var out []string
	for _, p := range slices.Sorted(maps.Keys(head)) {
		switch b, ok := base[p]; {
		case !ok:
			out = append(out, p+" (added)")
		case b != head[p]:
			out = append(out, p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(base)) {
		if _, ok := head[p]; !ok {
			out = append(out, p+" (removed)")
		}
	}
	return out
}

// Runs compares head against base.
func Runs(base, head *record.Record) Report {
	rep := Report{
		Base:       runOf(base),
		Head:       runOf(head),
		Alpha:      scoring.Alpha,
		Candidates: []Change{},
		Notes:      []string{},
	}
	if base.ManifestHash != "" && head.ManifestHash != "" {
		rep.ManifestChanged = new(base.ManifestHash != head.ManifestHash)
		if *rep.ManifestChanged {
			rep.ChangedFiles = changedFiles(base.Files, head.Files)
		}
	}
	rep.WinnerChanged = str(base.Winner) != str(head.Winner)

	baseOrder, baseSides := sides(base)
	headOrder, headSides := sides(head)
	common := commonTasks(base, head)
	rep.Tasks = len(common)
	for _, id := range headOrder {
		rep.Candidates = append(rep.Candidates, change(id, baseSides[id], headSides[id], common))
	}
	for _, id := range baseOrder {
		if _, ok := headSides[id]; !ok {
			rep.Candidates = append(rep.Candidates, change(id, baseSides[id], nil, common))
		}
	}
	if onlyBase, onlyHead := len(base.Tasks)-len(common), len(head.Tasks)-len(common); onlyBase > 0 || onlyHead > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the task sets differ: %d tasks in both, %d only in base, %d only in head; tasks are compared where both runs played them",
			len(common), onlyBase, onlyHead))
	}

	if base.Objective != head.Objective {
		rep.Notes = append(rep.Notes, "the objectives differ")
	}
	if base.Backend != head.Backend {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the backends differ (%s → %s): runtimes are not like for like",
			text.OneLine(base.Backend), text.OneLine(head.Backend)))
	}
	if base.Interrupted {
		rep.Notes = append(rep.Notes, "the base run was interrupted: its results are partial")
	}
	if head.Interrupted {
		rep.Notes = append(rep.Notes, "the head run was interrupted: its results are partial")
	}
	return rep
}

func runOf(rec *record.Record) Run {
	return Run{
		RunID: rec.RunID, Objective: rec.Objective, Backend: rec.Backend, StartedAt: rec.StartedAt,
		ManifestHash: rec.ManifestHash, Interrupted: rec.Interrupted, Winner: rec.Winner,
	}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// sides collects each candidate's figures in rec: the standing's when there
// is one, otherwise worked out from the results. order lists the
// candidates: the standings', then any that has results but no standing, in
// the order of its results.
func sides(rec *record.Record) (order []string, out map[string]*Side) {
	out = map[string]*Side{}
	results, byID := record.ByCandidate(rec.Results)
	for _, st := range rec.Standings {
		if _, dup := out[st.CandidateID]; dup {
			continue
		}
		order = append(order, st.CandidateID)
		s := &Side{
			Rank: st.Rank, Score: st.Score, ScoredTrials: st.ScoredTrials, Trials: st.Trials,
			Successes: st.Successes, SuccessRate: st.SuccessRate, RuntimeMeanSeconds: st.RuntimeMeanSeconds,
			Unverified: st.Unverified, ended: st.Trials, // counted from its results below, when it has some
		}
		out[st.CandidateID] = s
		if c := st.Cost; c != nil && c.UnpricedTrials == 0 {
			s.CostMeanUSD = new(c.MeanUSD)
		}
		if st.ScoredTrials == 0 && st.Trials == 0 {
			// A standing without counts (hand-written or older records):
			// take them from the results.
			fromResults(s, byID[st.CandidateID], false)
		}
	}
	for _, id := range results {
		rs := byID[id]
		s := out[id]
		if s == nil {
			s = &Side{}
			fromResults(s, rs, true)
			out[id] = s
			order = append(order, id)
		}
		// Its scores (by task too, in a suite) and the results that ran to
		// an end, counted again over its standing's.
		s.ended = 0
		if len(rec.Tasks) > 0 {
			s.tasks = make(map[string][]float64, len(rec.Tasks))
		}
		for _, r := range rs {
			if r.ErrorKind.Scored() {
				s.ended++
			}
			if r.Score == nil {
				continue
			}
			s.scores = append(s.scores, *r.Score)
			if s.tasks != nil {
				s.tasks[r.TaskID] = append(s.tasks[r.TaskID], *r.Score)
			}
		}
	}
	return order, out
}

// commonTasks are the tasks both records played, in head's order; none
// unless both are suites.
func commonTasks(base, head *record.Record) []string {
	inBase := map[string]bool{}
	for _, t := range base.Tasks {
		inBase[t.ID] = true
	}
	return slices.DeleteFunc(head.TaskIDs(), func(id string) bool { return !inBase[id] })
}

// suiteChange judges c over the common tasks: the paired test of the task
// scores, and each task that changed.
func suiteChange(c *Change, base, head *Side, common []string) {
	var xb, xh []float64
	for _, task := range common {
		b, h := base.tasks[task], head.tasks[task]
		if len(b) == 0 || len(h) == 0 {
			continue
		}
		sb, sh := scoring.Summarize(b), scoring.Summarize(h)
		xb, xh = append(xb, sb.Mean), append(xh, sh.Mean)
		d := sh.Mean - sb.Mean
		if math.Abs(d) <= 1e-9 {
			continue
		}
		tc := TaskChange{TaskID: task, Base: sb.Mean, Head: sh.Mean, Delta: d}
		if w, ok := scoring.WelchTest(h, b); ok {
			tc.Welch, tc.Significant = &w, w.Significant
		}
		c.Tasks = append(c.Tasks, tc)
	}
	slices.SortStableFunc(c.Tasks, func(a, b TaskChange) int { return cmp.Compare(a.Delta, b.Delta) })
	p, err := scoring.ComparePaired(xh, xb)
	if err != nil { // no task both scored: task scores are finite
		c.Test = TestNoScores
		return
	}
	c.Test, c.Paired, c.Significant = TestPaired, &p, p.Significant
	c.judge(p.MeanDifference)
}

// judge sets c's status by the sign of the head's difference d from the
// base, when the test found it significant.
func (c *Change) judge(d float64) {
	switch {
	case !c.Significant:
	case d > 0:
		c.Status = StatusImproved
	case d < 0:
		c.Status = StatusRegressed
	}
}

// fromResults fills s's counts from rs; with all, also the score, success
// rate and runtime, as scoring aggregates them.
func fromResults(s *Side, rs []*record.Trial, all bool) {
	st := scoring.Aggregate("", rs)
	s.Trials, s.ScoredTrials, s.Successes, s.Unverified = st.Trials, st.ScoredTrials, st.Successes, st.Unverified
	if all {
		s.Score, s.SuccessRate, s.RuntimeMeanSeconds = st.Score, st.SuccessRate, st.RuntimeMeanSeconds
	}
}

func change(id string, base, head *Side, common []string) Change {
	c := Change{CandidateID: id, Base: base, Head: head, Status: StatusUnchanged, Test: TestNone}
	switch {
	case base == nil:
		c.Status = StatusNew
		return c
	case head == nil:
		c.Status = StatusGone
		return c
	}
	if base.scored() && head.scored() {
		c.ScoreDelta = new(head.Score - base.Score)
	}
	if base.timed() && head.timed() {
		c.RuntimeDeltaSeconds = new(head.RuntimeMeanSeconds - base.RuntimeMeanSeconds)
		if base.RuntimeMeanSeconds > 0 {
			c.RuntimeRatio = new(head.RuntimeMeanSeconds / base.RuntimeMeanSeconds)
		}
	}
	if base.CostMeanUSD != nil && head.CostMeanUSD != nil && *base.CostMeanUSD > 0 {
		c.CostRatio = new(*head.CostMeanUSD / *base.CostMeanUSD)
	}
	if base.tasks != nil && head.tasks != nil {
		suiteChange(&c, base, head, common)
		return c
	}
	switch nb, nh := len(base.scores), len(head.scores); {
	case nb == 0 || nh == 0:
		c.Test = TestNoScores
	case nb == 1 || nh == 1:
		c.Test = TestSingleTrial
	default:
		w, _ := scoring.WelchTest(head.scores, base.scores) // two scores a side at least
		c.Test, c.Welch, c.Significant = TestWelch, &w, w.Significant
		c.judge(w.Difference)
	}
	return c
}

// Drops lists, one line each, the candidates whose score dropped
// significantly by more than maxDrop (a score difference, e.g. 0.05).
func (r Report) Drops(maxDrop float64) []string {
	var out []string
	for _, c := range r.Candidates {
		if c.Status != StatusRegressed || c.ScoreDelta == nil || -*c.ScoreDelta <= maxDrop {
			continue
		}
		out = append(out, fmt.Sprintf("%s: score dropped %s (%s → %s, %s), more than the %s allowed",
			text.OneLine(c.CandidateID), text.Num(-*c.ScoreDelta), text.Score(c.Base.Score), text.Score(c.Head.Score),
			testText(c), text.Num(maxDrop)))
	}
	return out
}
