package forge

import (
	"fmt"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/runner"
)

// BestScore is the run's best score and the candidates that have it: the
// winner's, or, without one, those whose score is the highest (tied, or
// not told apart); false when no candidate has a scored trial.
func (rec *Record) BestScore() (score float64, ids []string, ok bool) {
	for _, s := range rec.Standings {
		if s.ScoredTrials == 0 || rec.Winner != nil && s.CandidateID != *rec.Winner {
			continue
		}
		switch {
		case len(ids) == 0 || s.Score > score+1e-9:
			score, ids = s.Score, []string{s.CandidateID}
		case s.Score >= score-1e-9:
			ids = append(ids, s.CandidateID)
		}
	}
	return score, ids, len(ids) > 0
}

// BelowScore says why the run's best score (the winner's, or the tied
// best's) is below min; "" when it reaches it.
func (rec *Record) BelowScore(min float64) string {
	score, ids, ok := rec.BestScore()
	switch {
	case !ok:
		return "no candidate has a scored trial"
	case score < min:
		return fmt.Sprintf("the best score is %.3f (%s)", score, text.AndList(ids))
	}
	return ""
}

// Failed returns one line per gate of g the finished run fails, each
// starting with the gate's key.
func (g Gates) Failed(rec *Record) []string {
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
