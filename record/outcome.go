package record

// What a finished record says beyond its standings: the best score, the
// tasks left unsolved, what the trials cost.

import (
	"fmt"
	"slices"

	"github.com/forge-run/forge/internal/text"
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

// Unsolved are the suite's tasks some candidate of the run did not solve
// in every trial (an --oracle run has one candidate), in the plan's order.
func (rec *Record) Unsolved() []string {
	solved := map[string]bool{}
	for _, row := range rec.TaskMatrix {
		solved[row.TaskID] = len(row.Cells) > 0 && !slices.ContainsFunc(row.Cells, func(c TaskCell) bool { return !c.Solved })
	}
	return slices.DeleteFunc(rec.TaskIDs(), func(id string) bool { return solved[id] })
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
