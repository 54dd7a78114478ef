package forge

import (
	"context"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// budgetWith is a budget of limit whose finished trials cost seen, by
// candidate, with under of each candidate's jobs under way.
func budgetWith(limit float64, seen map[string][]float64, under map[string]int) *budget {
	b := newBudget(limit)
	for c, usds := range seen {
		for _, usd := range usds {
			b.running[c]++
			b.done(runner.Job{CandidateID: c}, &record.Cost{USD: usd})
		}
	}
	for c, n := range under {
		b.running[c] += n
	}
	return b
}

func TestBudgetDecide(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limit     float64
		seen      map[string][]float64
		under     map[string]int
		candidate string
		want      admission
	}{
		{"nothing known, nothing under way: the first job", 0.20, nil, nil, "a", admitted},
		{"the first trial of a candidate runs alone", 0.20, nil, map[string]int{"a": 1}, "a", deferred},
		{"no cost known at all: other candidates wait too", 0.20, nil, map[string]int{"a": 1}, "b", deferred},
		// $0.045 spent, 2 under way at $0.045: $0.18 with this one.
		{"2 under way fit", 0.20, map[string][]float64{"a": {0.045}}, map[string]int{"a": 2}, "a", admitted},
		// 3 under way: $0.225 with this one. Without them it would be $0.09.
		{"3 under way do not", 0.20, map[string][]float64{"a": {0.045}}, map[string]int{"a": 3}, "a", deferred},
		{"3 under way of another candidate do not", 0.20, map[string][]float64{"a": {0.045}, "b": {0.045}}, map[string]int{"b": 3}, "a", deferred},
		{"nothing under way and no money: the budget is reached", 0.20, map[string][]float64{"a": {0.045, 0.045, 0.045, 0.045}}, nil, "a", refused},
		// b's first trial is expected to cost what a's do.
		{"an unknown candidate's first trial at the run's cost", 0.20, map[string][]float64{"a": {0.045}}, map[string]int{"a": 2}, "b", admitted},
		{"an unknown candidate's first trial that does not fit", 0.20, map[string][]float64{"a": {0.045}}, map[string]int{"a": 3}, "b", deferred},
		// a costs $0.03 or $0.06: $0.087 expected (mean + 2 sd), not $0.045.
		{"the spread: one fits", 0.20, map[string][]float64{"a": {0.03, 0.06}}, nil, "a", admitted},
		{"the spread: one more under way does not", 0.20, map[string][]float64{"a": {0.03, 0.06}}, map[string]int{"a": 1}, "a", deferred},
		{"unpriced trials cost nothing", 0.20, map[string][]float64{"a": {0}}, map[string]int{"a": 7}, "a", admitted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := budgetWith(tc.limit, tc.seen, tc.under)
			if got := b.decide(tc.candidate); got != tc.want {
				name := []string{admitted: "admitted", deferred: "deferred", refused: "refused"}
				t.Errorf("decide(%s) = %s, want %s (spent $%v, under way %v)", tc.candidate, name[got], name[tc.want], b.spent, b.running)
			}
		})
	}
}

// A job deferred for a trial under way starts once that trial tells its
// cost; a job the budget cannot pay for is refused, and every later one.
func TestBudgetAdmitWaitsForCost(t *testing.T) {
	b := newBudget(0.20)
	ctx := context.Background()
	job := func(trial int) runner.Job { return runner.Job{CandidateID: "a", Trial: trial} }
	if !b.admit(ctx, job(1)) {
		t.Fatal("the first trial was refused")
	}
	// Trial 2 waits (its candidate's first trial has told no cost yet),
	// then starts once trial 1 ends, whichever of the two comes first.
	if b.mu.Lock(); b.decide("a") != deferred {
		t.Fatal("trial 2 would not wait for trial 1's cost")
	}
	b.mu.Unlock()
	admitted := make(chan bool)
	go func() { admitted <- b.admit(ctx, job(2)) }()
	b.done(job(1), &record.Cost{USD: 0.045})
	if !<-admitted {
		t.Fatal("trial 2 was refused once trial 1 cost $0.045")
	}
	for tr := 3; tr <= 4; tr++ {
		if !b.admit(ctx, job(tr)) {
			t.Fatalf("trial %d was refused", tr)
		}
	}
	// $0.045 spent and 3 under way: a fifth would make $0.225.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if b.admit(cancelled, job(5)) || b.wasReached() {
		t.Fatal("trial 5 did not wait for the trials under way")
	}
	for tr := 2; tr <= 4; tr++ {
		b.done(job(tr), &record.Cost{USD: 0.045})
	}
	if b.admit(ctx, job(5)) || !b.wasReached() {
		t.Fatal("trial 5 started past the budget")
	}
	if b.admit(ctx, job(6)) {
		t.Fatal("a job started after the budget was reached")
	}
	if s := b.stop(3); s.SpentUSD > 0.20 || s.NotStarted != 3 {
		t.Errorf("stop = %+v", s)
	}
}

// The user's case: 8 trials of $0.045 at concurrency 8 with $0.20 to
// spend start 4 (one first, to learn the price, then 3) and stop there.
func TestBudgetRunAtConcurrency(t *testing.T) {
	m, p := testPlan(t, []string{"a"}, 8, 8)
	fr := fakeRunner{run: func(ctx context.Context, job runner.Job) (runner.Result, error) {
		res := runner.Result{Usage: &runner.Usage{CostUSD: new(0.045)}}
		res.SetArtifact([]byte("ok"), 2)
		res.Settle(job, runner.Outcome{ExitCode: new(0), ArtifactFound: true})
		return res, nil
	}}
	rec, err := Run(context.Background(), Options{Manifest: m, Plan: p, Runner: fr, Backend: "fake", OutRoot: t.TempDir(), RunID: "r", MaxCostUSD: 0.20})
	if err != nil {
		t.Fatal(err)
	}
	if total := rec.TotalCostUSD(); total > 0.20 {
		t.Errorf("the run spent $%v of $0.20", total)
	}
	if s := rec.BudgetReached; s == nil || s.NotStarted != 4 || !rec.Interrupted {
		t.Errorf("budget_reached = %+v, interrupted %v; want 4 jobs not started", s, rec.Interrupted)
	}
}
