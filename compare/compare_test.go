package compare_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/runner"
)

// Sleep data (R's datasets::sleep): group 1 and group 2.
var (
	sleep1 = []float64{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0}
	sleep2 = []float64{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4}
)

func find(t *testing.T, rep compare.Report, id string) compare.Change {
	t.Helper()
	for _, c := range rep.Candidates {
		if c.CandidateID == id {
			return c
		}
	}
	t.Fatalf("no candidate %q in %+v", id, rep.Candidates)
	return compare.Change{}
}

// R: t.test(extra ~ group, data = sleep) gives t = -1.8608, df = 17.776,
// p-value = 0.07939, 95% CI -3.3654832 0.2054832 for group 1 minus group 2.
// With group 2 as the base and group 1 as the head, the head is the
// "group 1" side: same t, not significant at 0.05, so unchanged. Scores
// live in [0, 1], so the data is mapped there by (x + 2) / 10, which leaves
// t, df and p as they are and divides the difference and its interval by 10.
func TestRunsWelchSleepData(t *testing.T) {
	unit := func(xs []float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = (x + 2) / 10
		}
		return out
	}
	base := newRecord("base", day(20), "", cand{id: "sleep", scores: unit(sleep2)})
	head := newRecord("head", day(21), "", cand{id: "sleep", scores: unit(sleep1)})
	c := find(t, compare.Runs(base, head), "sleep")
	if c.Test != compare.TestWelch || c.Welch == nil || c.Welch.T == nil || c.Welch.DF == nil {
		t.Fatalf("change = %+v, want a Welch test", c)
	}
	near(t, "t", *c.Welch.T, -1.860813, 1e-5)
	near(t, "df", *c.Welch.DF, 17.77647, 1e-4)
	near(t, "p", c.Welch.PValue, 0.07939414, 1e-6)
	near(t, "ci lo", c.Welch.DifferenceCI95[0], -0.33654832, 1e-7)
	near(t, "ci hi", c.Welch.DifferenceCI95[1], 0.02054832, 1e-7)
	near(t, "delta", *c.ScoreDelta, (0.75-2.33)/10, 1e-12)
	if c.Significant || c.Status != compare.StatusUnchanged {
		t.Errorf("p = 0.079: significant %v, status %s; want not significant, unchanged", c.Significant, c.Status)
	}
	if got := compare.Runs(base, head).Drops(0); len(got) != 0 {
		t.Errorf("Drops(0) = %q, want none for a change that is not significant", got)
	}
}

// The same data shifted apart is significant both ways.
func TestRunsSignificantChanges(t *testing.T) {
	shift := func(xs []float64, d float64) []float64 {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = x/10 + d
		}
		return out
	}
	base := newRecord("base", day(20), "up",
		cand{id: "up", scores: shift(sleep1, 0.3)},
		cand{id: "down", scores: shift(sleep1, 0.5)},
	)
	head := newRecord("head", day(21), "up",
		cand{id: "up", scores: shift(sleep1, 0.6)},
		cand{id: "down", scores: shift(sleep1, 0.2)},
	)
	rep := compare.Runs(base, head)
	up, down := find(t, rep, "up"), find(t, rep, "down")
	if up.Status != compare.StatusImproved || !up.Significant || up.Welch.PValue >= 0.05 {
		t.Errorf("up: status %s significant %v p %v, want improved", up.Status, up.Significant, up.Welch.PValue)
	}
	if down.Status != compare.StatusRegressed || !down.Significant {
		t.Errorf("down: status %s significant %v, want regressed", down.Status, down.Significant)
	}
	near(t, "up delta", *up.ScoreDelta, 0.3, 1e-9)
	near(t, "down delta", *down.ScoreDelta, -0.3, 1e-9)
	near(t, "down welch difference", down.Welch.Difference, -0.3, 1e-9)

	// Drops: only a significant fall of more than maxDrop.
	if got := rep.Drops(0.29); len(got) != 1 || !strings.HasPrefix(got[0], "down: score dropped 0.30 (") ||
		!strings.Contains(got[0], "(0.57 → 0.28, p = 0.0015)") || !strings.Contains(got[0], "more than the 0.29 allowed") {
		t.Errorf("Drops(0.29) = %q, want one line for down", got)
	}
	if got := rep.Drops(0.31); len(got) != 0 {
		t.Errorf("Drops(0.31) = %q, want none: the drop is 0.30", got)
	}
}

// Deterministic candidates (no variance) that change score: p = 0.
func TestRunsNoVariance(t *testing.T) {
	base := newRecord("base", day(20), "a", cand{id: "a", scores: repeat(0.9, 3)}, cand{id: "b", scores: repeat(0.5, 3)})
	head := newRecord("head", day(21), "a", cand{id: "a", scores: repeat(0.6, 3)}, cand{id: "b", scores: repeat(0.5, 3)})
	rep := compare.Runs(base, head)
	a, b := find(t, rep, "a"), find(t, rep, "b")
	if a.Status != compare.StatusRegressed || a.Welch.PValue != 0 || a.Welch.T != nil {
		t.Errorf("a = %+v (welch %+v), want regressed with p = 0 and no t", a, a.Welch)
	}
	if b.Status != compare.StatusUnchanged || b.Welch.PValue != 1 {
		t.Errorf("b = %+v (welch %+v), want unchanged with p = 1", b, b.Welch)
	}
	if got := rep.Drops(0.1); len(got) != 1 || !strings.HasPrefix(got[0], "a: ") {
		t.Errorf("Drops(0.1) = %q, want a", got)
	}
	// The report encodes: no infinities or NaN anywhere.
	if _, err := json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
}

// With a single trial on either side nothing is significant, however large
// the change.
func TestRunsSingleTrial(t *testing.T) {
	for _, tc := range []struct {
		name       string
		base, head []float64
	}{
		{"one each", []float64{0.9}, []float64{0.1}},
		{"one in base", []float64{0.9}, []float64{0.1, 0.1, 0.12}},
		{"one in head", []float64{0.9, 0.91, 0.9}, []float64{0.1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := newRecord("base", day(20), "a", cand{id: "a", scores: tc.base})
			head := newRecord("head", day(21), "a", cand{id: "a", scores: tc.head})
			rep := compare.Runs(base, head)
			c := find(t, rep, "a")
			if c.Test != compare.TestSingleTrial || c.Significant || c.Status != compare.StatusUnchanged || c.Welch != nil {
				t.Errorf("change = %+v, want single-trial, unchanged, not significant", c)
			}
			if c.ScoreDelta == nil || *c.ScoreDelta > -0.7 {
				t.Errorf("delta = %v, want the (large) drop all the same", c.ScoreDelta)
			}
			if got := rep.Drops(0); len(got) != 0 {
				t.Errorf("Drops(0) = %q, want none", got)
			}
		})
	}
}

// A side whose trials all went unscored (infra failures) has no score to
// compare.
func TestRunsNoScoredTrials(t *testing.T) {
	infra := map[int]runner.ErrorKind{1: runner.ErrInfra, 2: runner.ErrInfra}
	base := newRecord("base", day(20), "a", cand{id: "a", scores: []float64{0.8, 0.9}})
	head := newRecord("head", day(21), "", cand{id: "a", scores: []float64{math.NaN(), math.NaN()}, failed: infra})
	c := find(t, compare.Runs(base, head), "a")
	if c.Test != compare.TestNoScores || c.ScoreDelta != nil || c.Significant || c.Status != compare.StatusUnchanged {
		t.Errorf("change = %+v, want no-scored-trials, no delta, unchanged", c)
	}
	if c.RuntimeDeltaSeconds != nil || c.RuntimeRatio != nil {
		t.Errorf("runtime delta %v ratio %v, want none: the head has no successful trial", c.RuntimeDeltaSeconds, c.RuntimeRatio)
	}
}

// New and gone candidates: head's standings order, then base-only ones in
// base's order.
func TestRunsNewAndGone(t *testing.T) {
	base := newRecord("base", day(20), "alpha",
		cand{id: "alpha", scores: []float64{0.9}},
		cand{id: "beta", scores: []float64{0.8}},
		cand{id: "gamma", scores: []float64{0.7}},
		cand{id: "delta", scores: []float64{0.6}},
	)
	head := newRecord("head", day(21), "eps",
		cand{id: "eps", scores: []float64{0.95}},
		cand{id: "beta", scores: []float64{0.85}},
		cand{id: "zeta", scores: []float64{0.5}},
	)
	rep := compare.Runs(base, head)
	var got []string
	for _, c := range rep.Candidates {
		got = append(got, c.CandidateID+":"+string(c.Status))
	}
	want := []string{"eps:new", "beta:unchanged", "zeta:new", "alpha:gone", "gamma:gone", "delta:gone"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("candidates = %v, want %v", got, want)
	}
	eps, alpha := find(t, rep, "eps"), find(t, rep, "alpha")
	if eps.Base != nil || eps.Head == nil || eps.ScoreDelta != nil || eps.Test != compare.TestNone {
		t.Errorf("new eps = %+v", eps)
	}
	if alpha.Head != nil || alpha.Base == nil || alpha.Base.Rank != 1 {
		t.Errorf("gone alpha = %+v", alpha)
	}
	if !rep.WinnerChanged || *rep.Base.Winner != "alpha" || *rep.Head.Winner != "eps" {
		t.Errorf("winner changed %v (%v → %v), want alpha → eps", rep.WinnerChanged, rep.Base.Winner, rep.Head.Winner)
	}
	if got := rep.Drops(0); len(got) != 0 {
		t.Errorf("Drops(0) = %q, want none: gone is not a drop", got)
	}
}

func TestRunsRuntimeAndSuccess(t *testing.T) {
	base := newRecord("base", day(20), "a", cand{id: "a", scores: []float64{0.8, 0.8}, runtime: []float64{2, 4}})
	head := newRecord("head", day(21), "a", cand{id: "a", scores: []float64{0.8, 0}, runtime: []float64{4.5, 9},
		failed: map[int]runner.ErrorKind{2: runner.ErrTimeout}})
	c := find(t, compare.Runs(base, head), "a")
	near(t, "runtime delta", *c.RuntimeDeltaSeconds, 4.5-3, 1e-12)
	near(t, "runtime ratio", *c.RuntimeRatio, 1.5, 1e-12)
	if c.Base.SuccessRate != 1 || c.Head.SuccessRate != 0.5 || c.Base.Trials != 2 || c.Head.Trials != 2 {
		t.Errorf("base %+v head %+v, want success 1 → 0.5 over 2 trials", c.Base, c.Head)
	}
}

// The cost change: head over base mean cost per trial, in the JSON, the
// table and the Markdown; no COST column when neither run has costs.
func TestRunsCostChange(t *testing.T) {
	base := newRecord("base", day(20), "a", cand{id: "a", scores: []float64{0.8, 0.8}, cost: []float64{0.02, 0.02}}, cand{id: "b", scores: []float64{0.5, 0.5}})
	head := newRecord("head", day(21), "a", cand{id: "a", scores: []float64{0.8, 0.8}, cost: []float64{0.004, 0.006}}, cand{id: "b", scores: []float64{0.5, 0.5}})
	rep := compare.Runs(base, head)
	c := find(t, rep, "a")
	if c.CostRatio == nil {
		t.Fatal("no cost ratio")
	}
	near(t, "cost ratio", *c.CostRatio, 0.25, 1e-12)
	if b := find(t, rep, "b"); b.CostRatio != nil || b.Head.CostMeanUSD != nil {
		t.Errorf("b has no cost: %+v", b)
	}
	var tbl, md bytes.Buffer
	if err := compare.WriteTable(&tbl, rep, false); err != nil {
		t.Fatal(err)
	}
	if err := compare.WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for what, out := range map[string]string{"table": tbl.String(), "markdown": md.String()} {
		if !strings.Contains(out, "$0.020 → $0.0050 0.25×") || !strings.Contains(strings.ToUpper(out), "COST") {
			t.Errorf("%s lacks the cost change:\n%s", what, out)
		}
	}
	tbl.Reset()
	if err := compare.WriteTable(&tbl, compare.Runs(newRecord("x", day(20), "b", cand{id: "b", scores: []float64{1}}), newRecord("y", day(21), "b", cand{id: "b", scores: []float64{1}})), false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tbl.String(), "COST") {
		t.Errorf("a COST column without costs:\n%s", tbl.String())
	}
}

func TestRunsManifestWinnerNotes(t *testing.T) {
	base := newRecord("base", day(20), "a", cand{id: "a", scores: []float64{0.8}})
	head := newRecord("head", day(21), "a", cand{id: "a", scores: []float64{0.8}})
	rep := compare.Runs(base, head)
	if rep.ManifestChanged == nil || *rep.ManifestChanged || rep.WinnerChanged || len(rep.Notes) != 0 {
		t.Errorf("like for like: manifest changed %v, winner changed %v, notes %q", rep.ManifestChanged, rep.WinnerChanged, rep.Notes)
	}

	head.ManifestHash = "sha256:bbbb"
	head.Backend = "daytona"
	head.Objective = "something else"
	head.Interrupted = true
	head.Winner = nil
	rep = compare.Runs(base, head)
	if rep.ManifestChanged == nil || !*rep.ManifestChanged {
		t.Errorf("manifest changed = %v, want true", rep.ManifestChanged)
	}
	if !rep.WinnerChanged {
		t.Error("winner a → none: WinnerChanged is false")
	}
	want := []string{
		"the objectives differ",
		"the backends differ (local → daytona): runtimes are not like for like",
		"the head run was interrupted: its results are partial",
	}
	if !reflect.DeepEqual(rep.Notes, want) {
		t.Errorf("notes = %q, want %q", rep.Notes, want)
	}

	head.ManifestHash = ""
	if rep = compare.Runs(base, head); rep.ManifestChanged != nil {
		t.Errorf("manifest changed = %v, want unknown (null) without a hash", *rep.ManifestChanged)
	}
}

// A record with results but no standings (a run interrupted before it was
// scored, or a hand-written one) is compared from its results.
func TestRunsResultsWithoutStandings(t *testing.T) {
	base := newRecord("base", day(20), "", cand{id: "a", scores: []float64{0.9, 0.92, 0.91}, runtime: []float64{1, 2, 3}})
	head := newRecord("head", day(21), "", cand{id: "a", scores: []float64{0.5, 0.52, 0.51}, runtime: []float64{2, 2, 2}})
	base.Standings, head.Standings = nil, nil
	c := find(t, compare.Runs(base, head), "a")
	if c.Base.Rank != 0 || c.Base.Trials != 3 || c.Base.ScoredTrials != 3 || c.Base.SuccessRate != 1 {
		t.Errorf("base side = %+v, want worked out from 3 results", c.Base)
	}
	near(t, "base score", c.Base.Score, 0.91, 1e-12)
	near(t, "runtime ratio", *c.RuntimeRatio, 1, 1e-12)
	if c.Status != compare.StatusRegressed {
		t.Errorf("status = %s, want regressed", c.Status)
	}
}

// The JSON field names are a contract: scripts read them.
func TestReportJSONFields(t *testing.T) {
	base := newRecord("base", day(20), "a", cand{id: "a", scores: []float64{0.8, 0.9}}, cand{id: "g", scores: []float64{0.1}})
	head := newRecord("head", day(21), "a", cand{id: "a", scores: []float64{0.7, 0.75}}, cand{id: "n", scores: []float64{0.2}})
	b, err := json.Marshal(compare.Runs(base, head))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]any) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s keys = %v, want %v", what, got, want)
		}
	}
	check("report", keys(v), []string{"alpha", "base", "candidates", "head", "manifest_changed", "notes", "winner_changed"})
	check("run", keys(v["base"].(map[string]any)), []string{"backend", "interrupted", "manifest_hash", "objective", "run_id", "started_at", "winner"})
	cs := v["candidates"].([]any)
	a := cs[0].(map[string]any)
	check("change", keys(a), []string{"base", "candidate_id", "head", "runtime_delta_seconds", "runtime_ratio",
		"score_delta", "significant", "status", "test", "welch"})
	check("side", keys(a["base"].(map[string]any)), []string{"rank", "runtime_mean_seconds", "score", "scored_trials",
		"success_rate", "successes", "trials"})
	check("welch", keys(a["welch"].(map[string]any)), []string{"df", "difference", "difference_ci95", "p_value", "significant", "t"})
	n := cs[1].(map[string]any)
	if n["candidate_id"] != "n" || n["status"] != "new" || n["base"] != nil || n["score_delta"] != nil || n["test"] != "none" {
		t.Errorf("new candidate = %v", n)
	}
	if _, has := n["welch"]; has {
		t.Errorf("new candidate has a welch test: %v", n)
	}
}
