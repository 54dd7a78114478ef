package cli

import (
	"fmt"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/runner"
)

// checkGates returns one line per gate the finished run failed: --fail-under
// and the manifest's gates: block.
func checkGates(m *forge.Manifest, rec *forge.Record, failUnder float64, failUnderSet bool) []string {
	var failed []string
	winnerScore := func() (float64, bool) {
		if rec.Winner == nil {
			return 0, false
		}
		for _, s := range rec.Standings {
			if s.CandidateID == *rec.Winner {
				return s.Score, true
			}
		}
		return 0, false
	}
	minScore := func(what string, min float64) {
		score, ok := winnerScore()
		switch {
		case !ok:
			failed = append(failed, fmt.Sprintf("%s %.3g: there is no winner", what, min))
		case score < min:
			failed = append(failed, fmt.Sprintf("%s %.3g: winner %s scored %.3f", what, min, *rec.Winner, score))
		}
	}
	if failUnderSet {
		minScore("--fail-under", failUnder)
	}
	g := m.Gates
	if g.MinWinnerScore != nil {
		minScore("gates.min_winner_score", *g.MinWinnerScore)
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
	return failed
}
