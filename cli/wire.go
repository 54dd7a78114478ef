package cli

import (
	"context"
	"slices"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// scoreRecord scores a finished run per the manifest's scoring: list.
func scoreRecord(m *forge.Manifest, plan *forge.Plan) func(*forge.Record) {
	return func(rec *forge.Record) {
		out := scoring.Score(m.Scoring, plan.Candidates, rec.Results)
		rec.Results = out.Results
		rec.Standings = out.Standings
		rec.Winner = out.Winner
		rec.WinnerLine = out.WinnerLine
		rec.Comparison = out.Comparison
		rec.Incomplete = out.Incomplete
	}
}

// judgeResult runs the manifest's judges on one job's artifact, when it has
// any.
func judgeResult(m *forge.Manifest) func(context.Context, runner.Job, *runner.Result, string) {
	if !slices.ContainsFunc(m.Scoring.Scorers, func(s scoring.Scorer) bool { return s.Type == scoring.TypeJudge }) {
		return nil
	}
	return func(ctx context.Context, job runner.Job, res *runner.Result, artifact string) {
		res.Judges = scoring.RunJudges(ctx, m.Scoring, scoring.JudgeInput{
			RunID: job.RunID, CandidateID: job.CandidateID, Trial: job.Trial, Objective: job.Objective,
			ArtifactPath: artifact, WorkDir: m.Dir, Env: job.Env,
		})
	}
}
