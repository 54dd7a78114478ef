package scoring

import (
	"reflect"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// TestAggregateIsScoresStanding: the standing Aggregate makes of scored
// results is Score's, but for the rank (and the breakdown, which needs the
// scorers).
func TestAggregateIsScoresStanding(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	var rs []record.Trial
	for i, s := range []float64{0.9, 0.7, 0.8} {
		rs = append(rs, record.Trial{Result: runner.Result{CandidateID: "a", Trial: i + 1, Success: true, RuntimeSeconds: float64(i + 1)},
			Judges: []record.JudgeResult{{Name: "q", Score: f(s)}}})
	}
	bad := record.Trial{Result: runner.Result{CandidateID: "a", Trial: 4}}
	bad.Failed(runner.ErrTimeout, "timed out")
	infra := record.Trial{Result: runner.Result{CandidateID: "a", Trial: 5}}
	infra.Failed(runner.ErrInfra, "sandbox vanished")
	rs = append(rs, bad, infra)
	out := Score(Config{Scorers: []Scorer{{Type: TypeJudge, Name: "q", Command: []string{"q"}}}}, []string{"a"}, rs)
	want := out.Standings[0]
	want.Rank, want.Tied, want.Breakdown = 0, false, nil
	_, byID := record.ByCandidate(scored(rs, out))
	if got := Aggregate("a", byID["a"]); !reflect.DeepEqual(got, want) {
		t.Errorf("Aggregate = %+v\nwant        %+v", got, want)
	}
	if s := Summarize([]float64{3, 1, 2}); s.N != 3 || s.Mean != 2 || s.SD != 1 || !(s.CI95[0] < 2 && s.CI95[1] > 2) {
		t.Errorf("Summarize = %+v", s)
	}
}
