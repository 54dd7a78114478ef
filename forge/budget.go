package forge

import (
	"context"
	"math"
	"sync"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// Budget is the manifest's budget: block: what one invocation of forge
// run may spend (docs/manifest.md).
type Budget struct {
	// MaxCostUSD stops starting jobs once what was spent, plus what the
	// jobs under way are expected to cost, would pass it.
	MaxCostUSD *float64 `yaml:"max_cost_usd"`
}

// budget keeps a run within Options.MaxCostUSD at any concurrency. A job
// starts only when what was spent, plus the expected cost of the jobs under
// way and of this one, stays within the limit, so the run passes the limit
// only by what its jobs cost above their estimate. A job's expected cost is
// its candidate's mean cost per trial plus two standard deviations (with
// one trial seen, that trial's cost). Until a candidate has a finished
// trial its cost is not known: one of its trials runs at a time, expected
// to cost what any trial of the run does; and until any trial has
// finished, only one job runs at all. A trial forge cannot price counts as
// costing nothing, here as in what was spent.
type budget struct {
	limit float64

	mu      sync.Mutex
	spent   float64
	all     costs            // every finished trial
	per     map[string]costs // by candidate
	running map[string]int   // jobs under way, by candidate
	reached bool
	// ended is closed, and replaced, when a job ends: what a waiting job
	// waits for.
	ended chan struct{}
}

// costs are finished trials' costs: how many, their sum and the sum of
// their squares.
type costs struct {
	n       int
	sum, sq float64
}

func (c *costs) add(usd float64) {
	c.n++
	c.sum += usd
	c.sq += usd * usd
}

// estimate is a cautious cost for the next trial: the mean plus two
// (sample) standard deviations, which covers most trials of a candidate
// whose cost varies.
func (c costs) estimate() float64 {
	mean := c.sum / float64(c.n)
	if c.n < 2 {
		return mean
	}
	v := (c.sq - c.sum*mean) / float64(c.n-1)
	return mean + 2*math.Sqrt(max(v, 0)) // rounding can make v a hair below 0
}

func newBudget(limit float64) *budget {
	if limit <= 0 {
		return nil
	}
	return &budget{limit: limit, per: map[string]costs{}, running: map[string]int{}, ended: make(chan struct{})}
}

// expected is a job of candidate's expected cost: its candidate's
// estimate, else every finished trial's, else nothing. b.mu is held.
func (b *budget) expected(candidate string) float64 {
	if c, ok := b.per[candidate]; ok {
		return c.estimate()
	}
	if b.all.n > 0 {
		return b.all.estimate()
	}
	return 0
}

// admission is what the budget says of a job that would start.
type admission int

const (
	admitted admission = iota
	deferred           // wait for a job under way to end: it tells a cost or frees money
	refused            // never: the budget is reached
)

// decide says whether a job of candidate may start now. b.mu is held.
func (b *budget) decide(candidate string) admission {
	if b.reached {
		return refused
	}
	if _, known := b.per[candidate]; !known && b.running[candidate] > 0 {
		return deferred // its first trial tells what its trials cost
	}
	under, committed := 0, b.spent // jobs under way, all together, and what they commit
	for c, n := range b.running {
		under += n
		committed += float64(n) * b.expected(c)
	}
	if b.all.n == 0 && under > 0 {
		return deferred // no cost is known at all: the first job runs alone
	}
	if committed < b.limit && committed+b.expected(candidate) <= b.limit {
		return admitted
	}
	if under > 0 {
		return deferred // a job under way may cost less than expected
	}
	return refused
}

// admit says whether job may start, and counts it under way if so; it
// waits while the jobs under way have yet to tell whether the budget can
// pay for it, or until ctx is done (false). Once it says no for the
// budget, it says no to every later job.
func (b *budget) admit(ctx context.Context, job runner.Job) bool {
	if b == nil {
		return true
	}
	for {
		b.mu.Lock()
		a := b.decide(job.CandidateID)
		switch a {
		case admitted:
			b.running[job.CandidateID]++
		case refused:
			b.reached = true
		}
		ended := b.ended
		b.mu.Unlock()
		if a != deferred {
			return a == admitted
		}
		select {
		case <-ended:
		case <-ctx.Done():
			return false
		}
	}
}

// done counts job's cost, once it ended, and wakes the jobs waiting.
func (b *budget) done(job runner.Job, cost *record.Cost) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running[job.CandidateID]--
	usd := 0.0
	if cost != nil {
		usd = cost.USD
	}
	b.spent += usd
	b.all.add(usd)
	c := b.per[job.CandidateID]
	c.add(usd)
	b.per[job.CandidateID] = c
	close(b.ended)
	b.ended = make(chan struct{})
}

// wasReached says a job was refused.
func (b *budget) wasReached() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reached
}

// stop is the BudgetStop of a budget that was reached, nil otherwise.
func (b *budget) stop(notStarted int) *record.BudgetStop {
	if !b.wasReached() {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return &record.BudgetStop{LimitUSD: b.limit, SpentUSD: b.spent, NotStarted: notStarted}
}
