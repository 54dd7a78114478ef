package report

// What the reports say of cost: the standings' COST column and each
// candidate's cost in a sentence.

import (
	"fmt"
	"slices"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/scoring"
)

// costed says some candidate's trials have a cost: the standings show it.
func costed(rec *forge.Record) bool {
	return slices.ContainsFunc(rec.Standings, func(st scoring.Standing) bool { return st.Cost != nil })
}

// unpriced says nothing of what k counts has a price: its trials used
// tokens, none priced.
func unpriced(k *scoring.CostStanding) bool { return k.UnpricedTrials == k.CostedTrials && k.USD == 0 }

// totalText is k's total, "$1.20", with "+unpriced" when part of it had no
// price; "unpriced" when none of it had one.
func totalText(k *scoring.CostStanding) string {
	if unpriced(k) {
		return "unpriced"
	}
	s := text.USD(k.USD)
	if k.UnpricedTrials > 0 {
		s += "+unpriced"
	}
	return s
}

// costText is the candidate's total cost and what a win cost: "$1.20
// ($0.040/solved)" in a suite, "/success" otherwise; "unpriced" when it
// has tokens but no price, and "+unpriced" when part of it had none.
func (c candidate) costText() string {
	k := c.standing.Cost
	switch {
	case k == nil:
		return "—"
	case unpriced(k):
		return "unpriced"
	}
	s := totalText(k)
	switch {
	case k.PerSolvedUSD != nil:
		s += " (" + text.USD(*k.PerSolvedUSD) + "/solved)"
	case c.standing.Suite == nil && k.PerSuccessUSD != nil:
		s += " (" + text.USD(*k.PerSuccessUSD) + "/success)"
	}
	return s
}

// costLine is what the candidate cost, in a sentence: "cost $0.11: $0.014
// a trial, 30200 tokens, $0.014 per success, $0.014 per solved task";
// "30200 tokens, unpriced" when nothing of it has a price; "" without a
// cost.
func (c candidate) costLine() string {
	k := c.standing.Cost
	switch {
	case k == nil:
		return ""
	case unpriced(k):
		return fmt.Sprintf("%d tokens, unpriced", k.Tokens)
	}
	s := fmt.Sprintf("cost %s: %s a trial, %d tokens", text.USD(k.USD), text.USD(k.MeanUSD), k.Tokens)
	if k.PerSuccessUSD != nil {
		s += ", " + text.USD(*k.PerSuccessUSD) + " per success"
	}
	if k.PerSolvedUSD != nil {
		s += ", " + text.USD(*k.PerSolvedUSD) + " per solved task"
	}
	if k.UnpricedTrials > 0 {
		s += fmt.Sprintf("; %d %s had something unpriced", k.UnpricedTrials, text.Plural(k.UnpricedTrials, "trial", "trials"))
	}
	return s
}
