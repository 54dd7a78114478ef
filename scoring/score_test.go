package scoring

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

func ok(id string, trial int, runtime float64) record.Trial {
	r := record.Trial{Result: runner.Result{CandidateID: id, Trial: trial, Success: true, RuntimeSeconds: runtime, ArtifactPath: id + "/output.md"}}
	r.SetArtifact([]byte("# out"), 5)
	return r
}

func failed(id string, trial int, kind runner.ErrorKind) record.Trial {
	r := record.Trial{Result: runner.Result{CandidateID: id, Trial: trial, RuntimeSeconds: 1}}
	r.Failed(kind, "boom")
	return r
}

// judged is a successful trial whose judge "q" said score (or failed).
func judged(id string, trial int, score float64, errMsg string) record.Trial {
	r := ok(id, trial, 1)
	j := record.JudgeResult{Name: "q", Error: errMsg}
	if errMsg == "" {
		j.Score = &score
	}
	r.Judges = []record.JudgeResult{j}
	return r
}

// judgeOnly scores trials by judge "q" alone, raw: the composite is the
// judge's score, so tests control trial scores exactly.
var judgeOnly = Config{Scorers: []Scorer{{Type: TypeJudge, Name: "q", Command: []string{"q"}}}}

func standing(t *testing.T, o Outcome, id string) record.Standing {
	t.Helper()
	for _, s := range o.Standings {
		if s.CandidateID == id {
			return s
		}
	}
	t.Fatalf("no standing for %q in %+v", id, o.Standings)
	return record.Standing{}
}

func mustJSON(t *testing.T, o Outcome) {
	t.Helper()
	if _, err := json.Marshal(struct {
		S []record.Standing
		C *record.Comparison
		F []*float64
	}{o.Standings, o.Comparison, scoresOf(o)}); err != nil {
		t.Fatalf("outcome does not encode as JSON: %v", err)
	}
}

func scoresOf(o Outcome) []*float64 { return o.Scores }

// ranks renders the standings as "1:a =2:b =2:c".
func ranks(o Outcome) string {
	var parts []string
	for _, s := range o.Standings {
		tie := ""
		if s.Tied {
			tie = "="
		}
		parts = append(parts, tie+strconv.Itoa(s.Rank)+":"+s.CandidateID)
	}
	return strings.Join(parts, " ")
}

func TestDefaultSingleTrial(t *testing.T) {
	res := []record.Trial{ok("alpha", 1, 2), ok("beta", 1, 4), failed("gamma", 1, runner.ErrTimeout)}
	o := Score(Config{}, []string{"alpha", "beta", "gamma"}, res)
	mustJSON(t, o)
	if got := ranks(o); got != "1:alpha 2:beta 3:gamma" {
		t.Errorf("ranks = %s", got)
	}
	// alpha: (1 + 0.2*1)/1.2 = 1; beta: (1 + 0.2*0)/1.2; gamma failed: 0.
	near(t, "alpha", *o.Scores[0], 1, 1e-12)
	near(t, "beta", *o.Scores[1], 1/1.2, 1e-12)
	near(t, "gamma", *o.Scores[2], 0, 0)
	if o.Winner == nil || *o.Winner != "alpha" {
		t.Fatalf("winner = %v", o.Winner)
	}
	if want := "winner: alpha (1.00), 1.20× beta (single trial; use --trials N for confidence)"; o.WinnerLine != want {
		t.Errorf("line = %q\nwant   %q", o.WinnerLine, want)
	}
	c := o.Comparison
	if c == nil || c.Method != "exact" || !c.Clear || c.PValue != nil || c.Best != "alpha" || c.Second != "beta" {
		t.Errorf("comparison = %+v", c)
	}
	g := standing(t, o, "gamma")
	if g.Errors["timeout"] != 1 || g.SuccessRate != 0 || g.Trials != 1 {
		t.Errorf("gamma = %+v", g)
	}
	a := standing(t, o, "alpha")
	if a.ScoreCI95 != [2]float64{1, 1} || a.RuntimeMeanSeconds != 2 || a.RuntimeMedianSeconds != 2 || a.Breakdown["runtime"] != 1 {
		t.Errorf("alpha = %+v", a)
	}
}

func TestAllFail(t *testing.T) {
	res := []record.Trial{failed("a", 1, runner.ErrCandidateFailed), failed("b", 1, runner.ErrTimeout),
		failed("a", 2, runner.ErrArtifactMissing), failed("b", 2, runner.ErrCandidateFailed)}
	o := Score(Config{}, []string{"a", "b"}, res)
	mustJSON(t, o)
	if o.Winner != nil || o.WinnerLine != "no winner: no candidate succeeded" {
		t.Errorf("winner = %v, line %q", o.Winner, o.WinnerLine)
	}
	if got := ranks(o); got != "=1:a =1:b" {
		t.Errorf("ranks = %s", got)
	}
	a := standing(t, o, "a")
	if a.Errors["candidate_failed"] != 1 || a.Errors["artifact_missing"] != 1 || a.SuccessCI95[0] != 0 {
		t.Errorf("a = %+v", a)
	}
}

func TestNoResults(t *testing.T) {
	o := Score(Config{}, []string{"a"}, nil)
	mustJSON(t, o)
	if o.Winner != nil || o.WinnerLine != "incomplete: a did not run (no results)" || len(o.Standings) != 1 || o.Standings[0].SuccessCI95 != [2]float64{0, 1} {
		t.Errorf("%+v", o)
	}
}

func TestIdenticalScoresTie(t *testing.T) {
	t.Run("single trial", func(t *testing.T) {
		o := Score(Config{}, []string{"b", "a", "c"}, []record.Trial{ok("b", 1, 3), ok("a", 1, 3), failed("c", 1, runner.ErrTimeout)})
		if got := ranks(o); got != "=1:a =1:b 3:c" {
			t.Errorf("ranks = %s", got)
		}
		if o.Winner != nil || o.WinnerLine != "no clear winner: a and b tie at 1.00 (single trial; use --trials N for confidence)" {
			t.Errorf("winner %v line %q", o.Winner, o.WinnerLine)
		}
	})
	t.Run("several trials", func(t *testing.T) {
		var res []record.Trial
		for i := 1; i <= 3; i++ {
			res = append(res, judged("a", i, 0.7, ""), judged("b", i, 0.7, ""), judged("c", i, 0.7, ""))
		}
		o := Score(judgeOnly, nil, res)
		mustJSON(t, o)
		if got := ranks(o); got != "=1:a =1:b =1:c" {
			t.Errorf("ranks = %s", got)
		}
		if o.Winner != nil || !strings.HasPrefix(o.WinnerLine, "no clear winner: a, b and c overlap (0.70 ± 0.00 vs 0.70 ± 0.00, p = 1)") {
			t.Errorf("winner %v line %q", o.Winner, o.WinnerLine)
		}
	})
}

func TestClearWinnerWithTrials(t *testing.T) {
	var res []record.Trial
	for i, s := range []float64{0.80, 0.82, 0.79, 0.81, 0.83} {
		res = append(res, judged("beta", i+1, s, ""))
	}
	for i, s := range []float64{0.60, 0.70, 0.64, 0.66, 0.65} {
		res = append(res, judged("alpha", i+1, s, ""))
	}
	o := Score(judgeOnly, []string{"alpha", "beta"}, res)
	mustJSON(t, o)
	if o.Winner == nil || *o.Winner != "beta" {
		t.Fatalf("winner = %v (%s)", o.Winner, o.WinnerLine)
	}
	if got := ranks(o); got != "1:beta 2:alpha" {
		t.Errorf("ranks = %s", got)
	}
	b := standing(t, o, "beta")
	near(t, "beta mean", b.Score, 0.81, 1e-12)
	near(t, "beta sd", b.ScoreStddev, math.Sqrt(0.00025), 1e-12)
	// The bounded interval: Wilson's for 0.81 with n_eff = m(1-m)/se²
	// "trials" and t(0.975, 4) for z (scoring/doc.go).
	z, m := 2.7764451051977987, 0.81
	n := m * (1 - m) / (0.00025 / 5)
	center := (m + z*z/(2*n)) / (1 + z*z/n)
	half := z / (1 + z*z/n) * math.Sqrt(m*(1-m)/n+z*z/(4*n*n))
	near(t, "beta ci lo", b.ScoreCI95[0], center-half, 1e-9)
	near(t, "beta ci hi", b.ScoreCI95[1], center+half, 1e-9)
	c := o.Comparison
	if c.Method != "welch-t" || !c.Clear || c.PValue == nil || *c.PValue >= 0.001 || c.DF == nil || c.T == nil {
		t.Errorf("comparison = %+v", c)
	}
	near(t, "ratio", c.Ratio, 0.81/0.65, 1e-12)
	if want := "winner: beta (0.81 ± 0.02), 1.25× alpha, p < 0.001"; o.WinnerLine != want {
		t.Errorf("line = %q\nwant   %q", o.WinnerLine, want)
	}
}

// The sleep data (see TestWelchSleepData) rescaled into [0, 1]: the test is
// invariant to affine changes, so p stays 0.0794 and the two must tie.
func TestOverlapIsATie(t *testing.T) {
	g1 := []float64{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0}
	g2 := []float64{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4}
	var res []record.Trial
	for i := range g1 {
		res = append(res, judged("one", i+1, (g1[i]+2)/10, ""), judged("two", i+1, (g2[i]+2)/10, ""))
	}
	o := Score(judgeOnly, nil, res)
	mustJSON(t, o)
	if o.Winner != nil || ranks(o) != "=1:two =1:one" {
		t.Fatalf("winner %v ranks %s", o.Winner, ranks(o))
	}
	near(t, "p", *o.Comparison.PValue, 0.07939414, 1e-6)
	near(t, "df", *o.Comparison.DF, 17.77647, 1e-4)
	if !strings.HasPrefix(o.WinnerLine, "no clear winner: two and one overlap (") || !strings.HasSuffix(o.WinnerLine, ", p = 0.079)") {
		t.Errorf("line = %q", o.WinnerLine)
	}
}

func TestTieGroupsAndCompetitionRanks(t *testing.T) {
	// a and b are indistinguishable, c is far below both, d below c.
	var res []record.Trial
	for i, s := range []float64{0.90, 0.80, 0.85} {
		res = append(res, judged("a", i+1, s, ""))
	}
	for i, s := range []float64{0.86, 0.84, 0.82} {
		res = append(res, judged("b", i+1, s, ""))
	}
	for i := 1; i <= 3; i++ {
		res = append(res, judged("c", i, 0.3, ""), judged("d", i, 0.1, ""))
	}
	o := Score(judgeOnly, []string{"e"}, res)
	if got := ranks(o); got != "=1:a =1:b 3:c 4:d 5:e" {
		t.Errorf("ranks = %s", got)
	}
}

func TestOnlyCandidate(t *testing.T) {
	o := Score(Config{}, []string{"solo"}, []record.Trial{ok("solo", 1, 1), ok("solo", 2, 1)})
	if o.Winner == nil || *o.Winner != "solo" || o.Comparison != nil || o.WinnerLine != "winner: solo (1.00 [0.01–1.00]), the only candidate" {
		t.Errorf("winner %v line %q cmp %+v", o.Winner, o.WinnerLine, o.Comparison)
	}
}

func TestRuntimeScorer(t *testing.T) {
	cfg := Config{Scorers: []Scorer{{Type: TypeRuntime}}}
	res := []record.Trial{ok("a", 1, 1), ok("b", 1, 3), ok("c", 1, 2), failed("d", 1, runner.ErrTimeout)}
	o := Score(cfg, nil, res)
	for i, want := range []float64{1, 0, 0.5, 0} {
		near(t, res[i].CandidateID, *o.Scores[i], want, 1e-12)
	}
	// A failed trial's runtime takes no part in min/max: d's 1s is not the
	// fastest. Runtime stats are over successful trials only.
	if s := standing(t, o, "d"); s.RuntimeMeanSeconds != 0 {
		t.Errorf("d runtime = %v, want 0 (no successes)", s.RuntimeMeanSeconds)
	}
	t.Run("all equal scores 1", func(t *testing.T) {
		o := Score(cfg, nil, []record.Trial{ok("a", 1, 2), ok("b", 1, 2)})
		if *o.Scores[0] != 1 || *o.Scores[1] != 1 {
			t.Errorf("scores %v %v", *o.Scores[0], *o.Scores[1])
		}
	})
	t.Run("rank", func(t *testing.T) {
		cfg := Config{Scorers: []Scorer{{Type: TypeRuntime, Normalize: NormRank}}}
		res := []record.Trial{ok("a", 1, 1), ok("b", 1, 5), ok("c", 1, 5), ok("d", 1, 9), ok("e", 1, 100)}
		o := Score(cfg, nil, res)
		for i, want := range []float64{1, 0.75, 0.75, 0.25, 0} {
			near(t, res[i].CandidateID, *o.Scores[i], want, 1e-12)
		}
	})
	t.Run("runtime median and sd", func(t *testing.T) {
		o := Score(cfg, nil, []record.Trial{ok("a", 1, 1), ok("a", 2, 2), ok("a", 3, 6), failed("a", 4, runner.ErrTimeout)})
		s := o.Standings[0]
		if s.RuntimeMeanSeconds != 3 || s.RuntimeMedianSeconds != 2 || s.SuccessRate != 0.75 {
			t.Errorf("%+v", s)
		}
		near(t, "runtime sd", s.RuntimeStddevSeconds, math.Sqrt(7), 1e-12)
	})
}

func submittedResult(id string, trial int, v any) record.Trial {
	r := ok(id, trial, 1)
	if v != nil {
		r.Submitted = map[string]any{"acc": v}
	}
	return r
}

func TestSubmittedScorer(t *testing.T) {
	max := Config{Scorers: []Scorer{{Type: TypeSubmitted, Field: "acc"}}}
	min := Config{Scorers: []Scorer{{Type: TypeSubmitted, Field: "acc", Goal: GoalMinimize}}}
	raw := Config{Scorers: []Scorer{{Type: TypeSubmitted, Field: "acc", Normalize: NormRaw}}}
	res := []record.Trial{submittedResult("a", 1, 10.0), submittedResult("b", 1, 20.0), submittedResult("c", 1, json.Number("15"))}
	for _, c := range []struct {
		name string
		cfg  Config
		want []float64
	}{
		{"maximize minmax", max, []float64{0, 1, 0.5}},
		{"minimize minmax", min, []float64{1, 0, 0.5}},
	} {
		o := Score(c.cfg, nil, res)
		for i, w := range c.want {
			near(t, c.name+" "+res[i].CandidateID, *o.Scores[i], w, 1e-12)
		}
	}

	t.Run("raw clamps and notes it", func(t *testing.T) {
		res := []record.Trial{submittedResult("a", 1, 0.9), submittedResult("a", 2, 1.5), submittedResult("b", 1, -2.0)}
		o := Score(raw, nil, res)
		for i, w := range []float64{0.9, 1, 0} {
			near(t, "raw", *o.Scores[i], w, 1e-12)
		}
		a := standing(t, o, "a")
		if len(a.Notes) != 1 || a.Notes[0] != "submitted:acc: 1 of 2 trials had raw values outside [0, 1], clamped" {
			t.Errorf("notes = %q", a.Notes)
		}
	})

	t.Run("NaN, Inf, text and missing score on_failure with a note", func(t *testing.T) {
		// ParseSubmitted keeps non-finite numbers as text ("NaN", "+Inf").
		res := []record.Trial{
			submittedResult("a", 1, 0.5), submittedResult("a", 2, "NaN"),
			submittedResult("b", 1, math.Inf(1)), submittedResult("b", 2, nil),
			submittedResult("c", 1, 0.7), submittedResult("c", 2, math.NaN()),
		}
		res[3].SubmitError = "FORGE_RESULT is not a JSON object"
		cfg := Config{Scorers: []Scorer{{Type: TypeSubmitted, Field: "acc", Normalize: NormRaw, OnFailure: f64(0.1)}}}
		o := Score(cfg, nil, res)
		mustJSON(t, o)
		for i, w := range []float64{0.5, 0.1, 0.1, 0.1, 0.7, 0.1} {
			near(t, "trial", *o.Scores[i], w, 1e-12)
		}
		b := standing(t, o, "b")
		want := `submitted:acc: 2 of 2 trials scored 0.1 for a missing metric (trial 1: submitted "acc" is not a finite number)`
		if len(b.Notes) != 1 || b.Notes[0] != want {
			t.Errorf("notes = %q\nwant %q", b.Notes, want)
		}
		if a := standing(t, o, "a"); len(a.Notes) != 1 || !strings.Contains(a.Notes[0], `(trial 2: submitted "acc" is not a number)`) {
			t.Errorf("a notes = %q", a.Notes)
		}
	})

	t.Run("failed trials take no part in minmax", func(t *testing.T) {
		bad := failed("c", 1, runner.ErrCandidateFailed)
		bad.Submitted = map[string]any{"acc": 1000.0}
		o := Score(max, nil, []record.Trial{submittedResult("a", 1, 10.0), submittedResult("b", 1, 20.0), bad})
		near(t, "b", *o.Scores[1], 1, 0)
		near(t, "c", *o.Scores[2], 0, 0)
	})
}

func TestArtifactScorer(t *testing.T) {
	cfg := Config{Scorers: []Scorer{{Type: TypeArtifact, Checks: []Check{{Contains: "# "}, {MinBytes: i64(100)}}}}}
	o := Score(cfg, nil, []record.Trial{ok("a", 1, 1), failed("b", 1, runner.ErrTimeout)})
	near(t, "a", *o.Scores[0], 0.5, 0)
	near(t, "b", *o.Scores[1], 0, 0)
}

func TestJudgeFailuresAreNotZero(t *testing.T) {
	cfg := Config{Scorers: []Scorer{
		{Type: TypeSuccess, Weight: f64(1)},
		{Type: TypeJudge, Name: "q", Command: []string{"q"}, Weight: f64(3)},
	}}
	res := []record.Trial{
		judged("a", 1, 0.6, ""),
		judged("a", 2, 0, "judge timed out after 60s"),
		judged("a", 3, 0, "judge printed no score: \"lol\""),
		ok("a", 4, 1), // never judged
		failed("a", 5, runner.ErrTimeout),
	}
	o := Score(cfg, nil, res)
	mustJSON(t, o)
	// Trial 1: (1 + 3*0.6)/4; trials 2-4: judge has no value, success alone
	// = 1 (not (1+0)/4); trial 5 failed: 0 on both.
	for i, w := range []float64{0.7, 1, 1, 1, 0} {
		near(t, "trial", *o.Scores[i], w, 1e-12)
	}
	a := o.Standings[0]
	if a.JudgeErrors != 3 || a.ScoredTrials != 5 {
		t.Errorf("judge errors %d scored %d", a.JudgeErrors, a.ScoredTrials)
	}
	want := "q: 3 of 5 trials not judged, scored without it (trial 2: judge timed out after 60s)"
	if len(a.Notes) != 1 || a.Notes[0] != want {
		t.Errorf("notes = %q\nwant %q", a.Notes, want)
	}
	near(t, "breakdown q", a.Breakdown["q"], 0.3, 1e-12) // trials 1 and 5 (on_failure 0)

	t.Run("judge only: no score at all", func(t *testing.T) {
		o := Score(judgeOnly, nil, []record.Trial{judged("a", 1, 0, "boom"), judged("b", 1, 0.4, "")})
		if o.Scores[0] != nil {
			t.Errorf("score = %v, want nil (nothing to score with)", *o.Scores[0])
		}
		a := standing(t, o, "a")
		if a.ScoredTrials != 0 || a.Trials != 1 || !strings.Contains(strings.Join(a.Notes, "|"), "no trial could be scored") {
			t.Errorf("a = %+v", a)
		}
		if o.Winner == nil || *o.Winner != "b" {
			t.Errorf("winner = %v", o.Winner)
		}
	})
}

func TestOnFailureOverride(t *testing.T) {
	cfg := Config{Scorers: []Scorer{{Type: TypeSuccess, OnFailure: f64(0.25)}}}
	o := Score(cfg, nil, []record.Trial{failed("a", 1, runner.ErrTimeout)})
	near(t, "failed", *o.Scores[0], 0.25, 0)
	if o.Winner != nil {
		t.Error("a candidate that never succeeded cannot win")
	}
}

func TestZeroWeightScorerIsReportedNotCounted(t *testing.T) {
	cfg := Config{Scorers: []Scorer{{Type: TypeSuccess}, {Type: TypeRuntime, Weight: f64(0)}}}
	o := Score(cfg, nil, []record.Trial{ok("a", 1, 1), ok("b", 1, 2)})
	if *o.Scores[0] != 1 || *o.Scores[1] != 1 {
		t.Errorf("scores %v %v", *o.Scores[0], *o.Scores[1])
	}
	if b := standing(t, o, "b"); b.Breakdown["runtime"] != 0 || b.Breakdown["success"] != 1 {
		t.Errorf("breakdown = %v", b.Breakdown)
	}
}

func TestWinnerOverZeroScore(t *testing.T) {
	o := Score(Config{}, nil, []record.Trial{ok("a", 1, 1), failed("b", 1, runner.ErrTimeout)})
	if o.WinnerLine != "winner: a (1.00), over b (0.00) (single trial; use --trials N for confidence)" {
		t.Errorf("line = %q", o.WinnerLine)
	}
	if o.Comparison.Ratio != 0 {
		t.Errorf("ratio = %v, want 0 (undefined)", o.Comparison.Ratio)
	}
}

func BenchmarkScore(b *testing.B) {
	cfg := propertyConfigs[1]
	var ids []string
	var res []record.Trial
	for c := 0; c < 50; c++ {
		id := "c" + strconv.Itoa(c)
		ids = append(ids, id)
		for tr := 1; tr <= 20; tr++ {
			r := judged(id, tr, float64((c*7+tr)%10)/10, "")
			r.RuntimeSeconds = float64(c%5 + tr%3)
			r.Submitted = map[string]any{"acc": float64(tr % 4)}
			res = append(res, r)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		Score(cfg, ids, res)
	}
}

func TestInfraAndCancelledTrialsAreNotScored(t *testing.T) {
	res := []record.Trial{
		ok("a", 1, 1), failed("a", 2, runner.ErrInfra), failed("a", 3, runner.ErrCancelled),
		ok("b", 1, 1), failed("b", 2, runner.ErrTimeout),
	}
	o := Score(Config{}, nil, res)
	mustJSON(t, o)
	if o.Scores[1] != nil || o.Scores[2] != nil || o.Scores[4] == nil {
		t.Errorf("scores: %v", scoresOf(o))
	}
	a, b := standing(t, o, "a"), standing(t, o, "b")
	if a.Trials != 3 || a.ScoredTrials != 1 || a.SuccessRate != 1 || a.Score != 1 || a.Errors["infra"] != 1 || a.Errors["cancelled"] != 1 {
		t.Errorf("a = %+v", a)
	}
	want := "2 of 3 trials not scored: they ended by no fault of the candidate (trial 2: infra: boom)"
	if len(a.Notes) != 1 || a.Notes[0] != want {
		t.Errorf("notes = %q\nwant %q", a.Notes, want)
	}
	if b.SuccessRate != 0.5 || b.Score != 0.5 {
		t.Errorf("b = %+v", b)
	}
	// One scored trial against two (1 and 0): far too little to tell.
	if o.Winner != nil || o.Comparison.Method != "t-borrowed-variance" ||
		o.WinnerLine != "no clear winner: a and b overlap (1.00 vs 0.50 ± 0.50, p = 0.67); 2 trials not scored (a trial 2: infra: boom)" ||
		o.Incomplete != nil {
		t.Errorf("winner = %v (%s), comparison %+v", o.Winner, o.WinnerLine, o.Comparison)
	}
}

// Identical candidates whose runtimes differ only by measuring noise tie,
// in a single trial and over several; runtimes further apart than the
// noise still rank.
func TestRuntimesWithinNoiseTie(t *testing.T) {
	ids := []string{"c1", "c2", "c3", "c4", "c5"}
	jitter := []float64{0.0513, 0.0502, 0.0541, 0.0528, 0.0507, 0.0519, 0.0533, 0.0524, 0.0511, 0.0536}
	for _, trials := range []int{1, 3} {
		var res []record.Trial
		k := 0
		for _, id := range ids {
			for tr := 1; tr <= trials; tr++ {
				res = append(res, ok(id, tr, jitter[k%len(jitter)]))
				k++
			}
		}
		o := Score(Config{}, ids, res)
		if o.Winner != nil {
			t.Errorf("%d trials: winner %s (%s), want none", trials, *o.Winner, o.WinnerLine)
		}
		for _, s := range o.Standings {
			if s.Rank != 1 || !s.Tied || s.Score != o.Standings[0].Score {
				t.Errorf("%d trials: %s rank %d tied %v score %v", trials, s.CandidateID, s.Rank, s.Tied, s.Score)
			}
		}
	}
	// 0.5 s against 0.3 s is not noise.
	o := Score(Config{}, []string{"fast", "slow"}, []record.Trial{ok("fast", 1, 0.3), ok("slow", 1, 0.5)})
	if o.Winner == nil || *o.Winner != "fast" {
		t.Errorf("winner %v (%s), want fast", o.Winner, o.WinnerLine)
	}
}

func TestWithinNoiseGroupsFromTheFastest(t *testing.T) {
	vals := []trialValue{{v: 1.00}, {v: 1.04}, {v: 1.06}, {v: 1.10}, {v: 0.001}, {v: 0.009}, {v: 0.012}, {state: stateNone, v: 7}}
	withinNoise(vals)
	want := []float64{1.00, 1.00, 1.06, 1.06, 0.001, 0.001, 0.012, 7}
	for i, w := range want {
		if vals[i].v != w {
			t.Errorf("value %d = %v, want %v", i, vals[i].v, w)
		}
	}
}

// A candidate none of whose trials ran to an end it answers for leaves the
// standings incomplete: no winner, whoever leads, and the line says who did
// not run and why (candidates with the same reason together).
func TestIncompleteStandingsNameNoWinner(t *testing.T) {
	infra := func(id string, trial int, msg string) record.Trial {
		r := failed(id, trial, runner.ErrInfra)
		r.ErrorMessage = msg
		return r
	}
	quota := "Total CPU limit exceeded. Maximum allowed: 4.\nTo increase concurrency limits, upgrade"
	res := []record.Trial{
		ok("c1", 1, 1), ok("c1", 2, 1), ok("c2", 1, 3), ok("c2", 2, 3),
		infra("c3", 1, quota), infra("c3", 2, quota),
		infra("c4", 1, quota), failed("c4", 2, runner.ErrCancelled),
		failed("c5", 1, runner.ErrAuth),
	}
	o := Score(Config{}, []string{"c1", "c2", "c3", "c4", "c5", "c6"}, res)
	mustJSON(t, o)
	if o.Winner != nil {
		t.Errorf("winner %s", *o.Winner)
	}
	want := "incomplete: c3 and c4 did not run (infra: Total CPU limit exceeded. Maximum allowed: 4. To increase concurrency limits, upgrade); " +
		"c5 did not run (auth: boom); c6 did not run (no results)"
	if o.WinnerLine != want {
		t.Errorf("line %q\nwant %q", o.WinnerLine, want)
	}
	var ids []string
	for _, u := range o.Incomplete {
		ids = append(ids, u.CandidateID)
	}
	if strings.Join(ids, ",") != "c3,c4,c5,c6" {
		t.Errorf("incomplete %v", o.Incomplete)
	}
	// The standings of those that ran stand.
	if got := ranks(o); !strings.HasPrefix(got, "1:c1 2:c2") {
		t.Errorf("ranks = %s", got)
	}
	if d := standing(t, o, "c6"); d.Trials != 0 || d.Score != 0 || len(d.Notes) != 1 || d.Notes[0] != "no results" {
		t.Errorf("c6 (no results) = %+v", d)
	}
	// One scored trial is enough: c4 with a timeout ran.
	res[6] = failed("c4", 1, runner.ErrTimeout)
	o = Score(Config{}, []string{"c1", "c2", "c3", "c4"}, res[:8])
	if len(o.Incomplete) != 1 || o.Incomplete[0].CandidateID != "c3" || o.Winner != nil {
		t.Errorf("incomplete %v winner %v", o.Incomplete, o.Winner)
	}
	o = Score(Config{}, []string{"c1", "c2"}, res[:4])
	if o.Incomplete != nil || o.Winner == nil || *o.Winner != "c1" {
		t.Errorf("complete run: incomplete %v winner %v (%s)", o.Incomplete, o.Winner, o.WinnerLine)
	}
}

// Ties do not chain down the list: b cannot be told from a, c cannot be
// told from b, but c is clearly below a, so c does not share a's rank.
func TestTiesDoNotChain(t *testing.T) {
	var res []record.Trial
	for i, s := range []float64{0.90, 0.91, 0.89, 0.90} {
		res = append(res, judged("a", i+1, s, ""))
	}
	for i, s := range []float64{0.95, 0.75, 0.95, 0.75} {
		res = append(res, judged("b", i+1, s, ""))
	}
	for i, s := range []float64{0.80, 0.81, 0.79, 0.80} {
		res = append(res, judged("c", i+1, s, ""))
	}
	o := Score(judgeOnly, nil, res)
	if got := ranks(o); got != "=1:a =1:b 3:c" {
		t.Errorf("ranks = %s, want =1:a =1:b 3:c", got)
	}
}
