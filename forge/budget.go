package forge

import (
	"fmt"
	"sync"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/runner"
)

// Budget is the manifest's budget: block: what one invocation of forge
// run may spend (docs/manifest.md).
type Budget struct {
	// MaxCostUSD stops starting jobs once what was spent, plus what the
	// jobs under way are expected to cost, would pass it.
	MaxCostUSD *float64 `yaml:"max_cost_usd"`
}

// BudgetStop says the run stopped starting jobs because of its budget:
// the limit, and what its finished jobs had spent when it stopped.
type BudgetStop struct {
	LimitUSD float64 `json:"limit_usd"`
	SpentUSD float64 `json:"spent_usd"`
	// NotStarted counts the jobs it did not start.
	NotStarted int `json:"not_started"`
}

// String is the line that says so.
func (b *BudgetStop) String() string {
	return fmt.Sprintf("budget reached: %s spent of %s; %d %s not started", text.USD(b.SpentUSD), text.USD(b.LimitUSD),
		b.NotStarted, text.Plural(b.NotStarted, "job", "jobs"))
}

// TotalCostUSD is what the record's trials cost, all together (the priced
// part: what has no price is not in it).
func (rec *Record) TotalCostUSD() float64 {
	total := 0.0
	for i := range rec.Results {
		if c := rec.Results[i].Cost; c != nil {
			total += c.USD
		}
	}
	return total
}

// budget keeps a run within Options.MaxCostUSD: a job starts only when what
// was spent plus the expected cost (mean of its candidate's jobs, else of
// all) of the jobs under way and of this one stays within the limit.
type budget struct {
	limit float64

	mu      sync.Mutex
	spent   float64
	costed  int
	per     map[string]costMean // by candidate
	running map[string]int      // jobs under way, by candidate
	reached bool
}

type costMean struct {
	n   int
	sum float64
}

func newBudget(limit float64) *budget {
	if limit <= 0 {
		return nil
	}
	return &budget{limit: limit, per: map[string]costMean{}, running: map[string]int{}}
}

// expected is a job of candidate's expected cost. b.mu is held.
func (b *budget) expected(candidate string) float64 {
	if m := b.per[candidate]; m.n > 0 {
		return m.sum / float64(m.n)
	}
	if b.costed > 0 {
		return b.spent / float64(b.costed)
	}
	return 0
}

// admit says whether job may start, and counts it under way if so. Once it
// says no, it says no to every later job.
func (b *budget) admit(job runner.Job) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reached {
		return false
	}
	committed := b.spent + b.expected(job.CandidateID)
	for c, n := range b.running {
		committed += float64(n) * b.expected(c)
	}
	if b.spent >= b.limit || committed > b.limit {
		b.reached = true
		return false
	}
	b.running[job.CandidateID]++
	return true
}

// done counts job's cost, once it ended.
func (b *budget) done(job runner.Job, cost *runner.Cost) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running[job.CandidateID]--
	if cost == nil {
		return
	}
	b.spent += cost.USD
	b.costed++
	m := b.per[job.CandidateID]
	b.per[job.CandidateID] = costMean{m.n + 1, m.sum + cost.USD}
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
func (b *budget) stop(notStarted int) *BudgetStop {
	if !b.wasReached() {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return &BudgetStop{LimitUSD: b.limit, SpentUSD: b.spent, NotStarted: notStarted}
}
