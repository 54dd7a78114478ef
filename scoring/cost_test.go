package scoring

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

func price(v float64) *float64 { return &v }

func nearly(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestPriceTrial(t *testing.T) {
	p := &Pricing{
		Models:  map[string]ModelPrice{"m": {Input: price(2), CachedInput: price(0.5), Output: price(8)}, "plain": {Input: price(1), Output: price(1)}},
		Sandbox: SandboxPrice{VCPUHour: price(0.1), GiBHour: price(0.01)},
	}
	r := record.Trial{Result: runner.Result{Backend: "daytona", JobSeconds: 1800, Resources: &runner.Resources{CPU: 2, MemoryGiB: 4},
		Usage: &runner.Usage{Models: []runner.ModelUsage{
			{Model: "m", InputTokens: 1_000_000, CachedInputTokens: 400_000, OutputTokens: 100_000, TotalTokens: 1_100_000},
			{Model: "plain", InputTokens: 500_000, OutputTokens: 500_000, TotalTokens: 1_000_000},
		}}}}
	c := p.Price(&r)
	// m: 0.6M × 2 + 0.4M × 0.5 + 0.1M × 8 = 1.2 + 0.2 + 0.8 = 2.2; plain: 1.0
	// sandbox: 0.5 h × (2 × 0.1 + 4 × 0.01) = 0.12
	if c == nil || !nearly(c.ModelUSD, 3.2) || !nearly(c.SandboxUSD, 0.12) || !nearly(c.USD, 3.32) || c.Tokens != 2_100_000 || c.Unpriced != "" {
		t.Fatalf("%+v", c)
	}

	// The candidate's own cost wins over the tokens' price.
	own := 0.5
	r.Usage.CostUSD = &own
	if c := p.Price(&r); !nearly(c.ModelUSD, 0.5) {
		t.Errorf("cost_usd: %+v", c)
	}

	// No price known: the tokens count, the cost says what is unpriced;
	// a local process has no resources for vcpu_hour.
	loc := record.Trial{Result: runner.Result{Backend: "local", JobSeconds: 60, Usage: &runner.Usage{Models: []runner.ModelUsage{
		{Model: "other", InputTokens: 10, OutputTokens: 5, TotalTokens: 15}, {InputTokens: 1, OutputTokens: 1, TotalTokens: 2}}}}}
	c = p.Price(&loc)
	for _, want := range []string{"no price for model other (15 tokens)", "2 tokens of no named model", "resources are unknown (local"} {
		if !strings.Contains(c.Unpriced, want) {
			t.Errorf("unpriced %q lacks %q", c.Unpriced, want)
		}
	}
	if c.USD != 0 || c.Tokens != 17 {
		t.Errorf("%+v", c)
	}

	// A flat sandbox_hour prices any backend; without usage nor sandbox
	// price there is no cost at all.
	flat := &Pricing{Sandbox: SandboxPrice{SandboxHour: price(3.6)}}
	if c := flat.Price(&record.Trial{Result: runner.Result{Backend: "local", JobSeconds: 10}}); c == nil || !nearly(c.USD, 0.01) {
		t.Errorf("flat: %+v", c)
	}
	var none *Pricing
	if c := none.Price(&record.Trial{Result: runner.Result{JobSeconds: 10}}); c != nil {
		t.Errorf("no pricing, no usage: %+v", c)
	}
	if c := none.Price(&record.Trial{Result: runner.Result{Usage: &runner.Usage{Models: []runner.ModelUsage{{Model: "m", InputTokens: 1, TotalTokens: 1}}}}}); c == nil || c.Tokens != 1 || c.Unpriced == "" {
		t.Errorf("usage without pricing: %+v", c)
	}
}

func TestCostStanding(t *testing.T) {
	res := []record.Trial{
		{Result: runner.Result{CandidateID: "a", Trial: 1, Success: true}, Cost: &record.Cost{USD: 1, ModelUSD: 1, Tokens: 10}},
		{Result: runner.Result{CandidateID: "a", Trial: 2, Success: false, ErrorKind: runner.ErrCandidateFailed}, Cost: &record.Cost{USD: 3, ModelUSD: 3, Tokens: 30, Unpriced: "x"}},
		{Result: runner.Result{CandidateID: "b", Trial: 1, Success: true}},
	}
	out := Score(Config{}, []string{"a", "b"}, res)
	var a, b *record.Standing
	for i := range out.Standings {
		switch out.Standings[i].CandidateID {
		case "a":
			a = &out.Standings[i]
		case "b":
			b = &out.Standings[i]
		}
	}
	c := a.Cost
	if c == nil || c.USD != 4 || c.MeanUSD != 2 || c.Tokens != 40 || c.CostedTrials != 2 || c.UnpricedTrials != 1 || c.PerSuccessUSD == nil || *c.PerSuccessUSD != 4 {
		t.Errorf("a: %+v", c)
	}
	if b.Cost != nil {
		t.Errorf("b had no cost: %+v", b.Cost)
	}
}

// A suite where the cheaper candidate is within noise of the best: the
// winner line names it, with what it solves and what it costs; a dearer
// runner-up is not named.
func TestWinnerLineNamesCheaperRunnerUp(t *testing.T) {
	var tasks []Task
	var res []record.Trial
	for i := range 20 {
		id := fmt.Sprintf("t%02d", i)
		tasks = append(tasks, Task{ID: id})
		// alpha solves 20 tasks at $1 a trial; beta 19 at $0.25.
		res = append(res,
			record.Trial{Result: runner.Result{CandidateID: "alpha", TaskID: id, Trial: 1, Success: true}, Cost: &record.Cost{USD: 1, ModelUSD: 1}},
			record.Trial{Result: runner.Result{CandidateID: "beta", TaskID: id, Trial: 1, Success: i != 7}, Cost: &record.Cost{USD: 0.25, ModelUSD: 0.25}})
		if i == 7 {
			res[len(res)-1].ErrorKind = runner.ErrCandidateFailed
		}
	}
	out := ScoreSuite(Config{Scorers: []Scorer{{Type: TypeSuccess}}}, Suite{Candidates: []string{"alpha", "beta"}, Tasks: tasks}, res)
	want := "; beta, within noise of alpha, solves 95% of what alpha solves at 25% of its cost"
	if !strings.HasSuffix(out.WinnerLine, want) {
		t.Errorf("winner line %q; want it to end %q", out.WinnerLine, want)
	}
	var beta *record.Standing
	for i := range out.Standings {
		if out.Standings[i].CandidateID == "beta" {
			beta = &out.Standings[i]
		}
	}
	if beta.Cost.PerSolvedUSD == nil || !nearly(*beta.Cost.PerSolvedUSD, 5.0/19) {
		t.Errorf("beta's cost per solved task: %+v", beta.Cost)
	}

	// beta dearer: nothing said of cost.
	for i := range res {
		if res[i].CandidateID == "beta" {
			res[i].Cost = &record.Cost{USD: 2, ModelUSD: 2}
		}
	}
	out = ScoreSuite(Config{Scorers: []Scorer{{Type: TypeSuccess}}}, Suite{Candidates: []string{"alpha", "beta"}, Tasks: tasks}, res)
	if strings.Contains(out.WinnerLine, "cost") {
		t.Errorf("a dearer runner-up is named: %q", out.WinnerLine)
	}
}

// TestUnpricedWinsHaveNoPrice: a candidate whose every trial is unpriced
// has no dollar figure per success or per solved task: a win is not free.
// One priced trial gives the figure (its notes say some were unpriced).
func TestUnpricedWinsHaveNoPrice(t *testing.T) {
	var c costTally
	for range 3 {
		c.add(&record.Cost{Tokens: 100, Unpriced: "model x has no price"})
	}
	if st := c.standing(3); st == nil || st.PerSuccessUSD != nil || !st.Unpriced() {
		t.Errorf("all unpriced: %+v", st)
	}
	c.add(&record.Cost{USD: 0.5, ModelUSD: 0.5})
	if st := c.standing(4); st.PerSuccessUSD == nil || *st.PerSuccessUSD != 0.125 {
		t.Errorf("partly unpriced: %+v", st)
	}
	var priced costTally
	priced.add(&record.Cost{USD: 0.5, ModelUSD: 0.5})
	if st := priced.standing(1); st.PerSuccessUSD == nil || *st.PerSuccessUSD != 0.5 {
		t.Errorf("priced: %+v", st)
	}
}
