package forge

// What the engine adds to a run's record (package record): its outcome,
// scored.

import (
	"iter"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/scoring"
)

// score scores the record's results with cfg over suite s.
func score(rec *record.Record, cfg scoring.Config, s scoring.Suite) {
	out := scoring.ScoreSuite(cfg, s, rec.Results)
	out.Apply(rec.Results)
	setOutcome(rec, out, func(yield func(*record.Trial) bool) {
		for i := range rec.Results {
			if !yield(&rec.Results[i]) {
				return
			}
		}
	})
}

// setOutcome puts out in the record of trials, scored.
func setOutcome(rec *record.Record, out scoring.Outcome, trials iter.Seq[*record.Trial]) {
	rec.Standings = out.Standings
	rec.Winner = out.Winner
	rec.WinnerLine = out.WinnerLine
	rec.Comparison = out.Comparison
	rec.Incomplete = out.Incomplete
	rec.TaskMatrix = out.Tasks
	rec.HeadToHead = out.HeadToHead
	partial(rec, trials)
}
