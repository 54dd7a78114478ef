package forge

import (
	"fmt"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// Failed returns one line per gate of g the finished run fails, each
// starting with the gate's key.
func (g Gates) Failed(rec *record.Record) []string {
	var failed []string
	if g.MinWinnerScore != nil {
		if why := rec.BelowScore(*g.MinWinnerScore); why != "" {
			failed = append(failed, fmt.Sprintf("gates.min_winner_score %.3g: %s", *g.MinWinnerScore, why))
		}
	}
	if g.RequireWinner && rec.Winner == nil {
		failed = append(failed, "gates.require_winner: there is no winner")
	}
	if g.MinSuccessRate != nil {
		for _, s := range rec.Standings {
			if s.SuccessRate < *g.MinSuccessRate {
				failed = append(failed, fmt.Sprintf("gates.min_success_rate %.3g: %s succeeded in %d of %d trials",
					*g.MinSuccessRate, s.CandidateID, s.Successes, s.Trials))
			}
		}
	}
	if g.MaxInfraErrors != nil {
		n := 0
		for _, r := range rec.Results {
			if r.ErrorKind.Fault() == runner.FaultInfra {
				n++
			}
		}
		if n > *g.MaxInfraErrors {
			failed = append(failed, fmt.Sprintf("gates.max_infra_errors %d: %d jobs failed on infrastructure", *g.MaxInfraErrors, n))
		}
	}
	if g.MaxCostUSD != nil {
		if total := rec.TotalCostUSD(); total > *g.MaxCostUSD {
			failed = append(failed, fmt.Sprintf("gates.max_cost_usd %s: the trials cost %s", text.USD(*g.MaxCostUSD), text.USD(total)))
		}
	}
	return failed
}
