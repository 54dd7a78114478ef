package scoring

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// randomRun makes a run of 1-6 candidates with 1-6 trials each, drawing
// values from small sets so that exact ties, all-fail candidates, judge
// failures and missing metrics all occur.
func randomRun(rng *rand.Rand) (ids []string, res []record.Trial) {
	nc := 1 + rng.IntN(6)
	trials := 1 + rng.IntN(6)
	for c := 0; c < nc; c++ {
		id := fmt.Sprintf("c%d", c)
		ids = append(ids, id)
		if rng.IntN(8) == 0 {
			continue // no results at all
		}
		for tr := 1; tr <= trials; tr++ {
			if rng.IntN(5) == 0 {
				res = append(res, failed(id, tr, []runner.ErrorKind{runner.ErrTimeout, runner.ErrCandidateFailed, runner.ErrInfra}[rng.IntN(3)]))
				continue
			}
			r := ok(id, tr, float64(1+rng.IntN(4))*0.5)
			switch rng.IntN(6) {
			case 0:
			case 1:
				r.Submitted = map[string]any{"acc": "NaN"}
			default:
				r.Submitted = map[string]any{"acc": float64(rng.IntN(5)) / 4}
			}
			j := record.JudgeResult{Name: "q"}
			if rng.IntN(6) == 0 {
				j.Error = fmt.Sprintf("judge timed out (%d)", rng.IntN(3))
			} else {
				s := float64(rng.IntN(5)) / 4
				j.Score = &s
			}
			r.Judges = []record.JudgeResult{j}
			if rng.IntN(2) == 0 {
				r.SetArtifact([]byte(`{"n": 3}`), 8)
			}
			res = append(res, r)
		}
	}
	return ids, res
}

var propertyConfigs = []Config{
	{},
	{Scorers: []Scorer{
		{Type: TypeSuccess},
		{Type: TypeRuntime, Weight: f64(0.3), Normalize: NormRank},
		{Type: TypeSubmitted, Field: "acc", Weight: f64(2)},
		{Type: TypeArtifact, Checks: []Check{{JSON: str("/n"), Equals: 3}, {Contains: "{"}}},
		{Type: TypeJudge, Name: "q", Command: []string{"q"}, Weight: f64(2)},
	}},
	judgeOnly,
}

type keyed struct {
	id    string
	trial int
	score string
}

// scored is rs with o's scores set, on a copy.
func scored(rs []record.Trial, o Outcome) []record.Trial {
	rs = append([]record.Trial(nil), rs...)
	o.Apply(rs)
	return rs
}

func resultKeys(rs []record.Trial) []keyed {
	out := make([]keyed, len(rs))
	for i, r := range rs {
		s := "nil"
		if r.Score != nil {
			s = fmt.Sprintf("%b", *r.Score) // bit-exact
		}
		out[i] = keyed{r.CandidateID, r.Trial, s}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].id != out[b].id {
			return out[a].id < out[b].id
		}
		return out[a].trial < out[b].trial
	})
	return out
}

// TestScoreInvariantToOrder: shuffling the candidates and the results
// changes nothing, bit for bit (standings, winner, comparison, scores).
func TestScoreInvariantToOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 300; iter++ {
		ids, res := randomRun(rng)
		cfg := propertyConfigs[iter%len(propertyConfigs)]
		want := Score(cfg, ids, res)
		mustJSON(t, want)
		for shuffle := 0; shuffle < 4; shuffle++ {
			ids2 := append([]string(nil), ids...)
			res2 := append([]record.Trial(nil), res...)
			rng.Shuffle(len(ids2), func(i, j int) { ids2[i], ids2[j] = ids2[j], ids2[i] })
			rng.Shuffle(len(res2), func(i, j int) { res2[i], res2[j] = res2[j], res2[i] })
			got := Score(cfg, ids2, res2)
			if !reflect.DeepEqual(got.Standings, want.Standings) {
				t.Fatalf("iteration %d: standings depend on order\n got %+v\nwant %+v", iter, got.Standings, want.Standings)
			}
			if !reflect.DeepEqual(got.Winner, want.Winner) || got.WinnerLine != want.WinnerLine ||
				!reflect.DeepEqual(got.Comparison, want.Comparison) {
				t.Fatalf("iteration %d: winner depends on order: %q vs %q", iter, got.WinnerLine, want.WinnerLine)
			}
			if !reflect.DeepEqual(resultKeys(scored(res2, got)), resultKeys(scored(res, want))) {
				t.Fatalf("iteration %d: trial scores depend on order", iter)
			}
		}
	}
}

// TestStandingsInvariants checks what must hold for any run.
func TestStandingsInvariants(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 300; iter++ {
		ids, res := randomRun(rng)
		o := Score(propertyConfigs[iter%len(propertyConfigs)], ids, res)
		if len(o.Standings) != len(ids) {
			t.Fatalf("iteration %d: %d standings for %d candidates", iter, len(o.Standings), len(ids))
		}
		for i, s := range o.Standings {
			if s.Score < 0 || s.Score > 1 || s.SuccessRate < 0 || s.SuccessRate > 1 {
				t.Fatalf("iteration %d: out of range: %+v", iter, s)
			}
			if s.ScoreCI95[0] > s.Score || s.ScoreCI95[1] < s.Score {
				t.Fatalf("iteration %d: interval %v misses the mean %v", iter, s.ScoreCI95, s.Score)
			}
			if i > 0 {
				p := o.Standings[i-1]
				if s.Rank < p.Rank || (s.Rank == p.Rank) != (s.Tied && p.Tied && s.Rank == p.Rank) {
					t.Fatalf("iteration %d: ranks %+v then %+v", iter, p, s)
				}
				if s.Rank != p.Rank && s.Rank != i+1 {
					t.Fatalf("iteration %d: rank %d at position %d is not competition ranking", iter, s.Rank, i+1)
				}
				if s.Trials > 0 && p.Trials > 0 && s.Score > p.Score+tieEpsilon {
					t.Fatalf("iteration %d: %s (%v) listed below %s (%v)", iter, s.CandidateID, s.Score, p.CandidateID, p.Score)
				}
			}
		}
		if o.Winner != nil {
			top := o.Standings[0]
			if *o.Winner != top.CandidateID || top.Tied || top.Successes == 0 {
				t.Fatalf("iteration %d: winner %s but top %+v", iter, *o.Winner, top)
			}
		}
		if o.Comparison != nil && o.Winner != nil && !o.Comparison.Clear {
			t.Fatalf("iteration %d: a winner without a clear comparison", iter)
		}
	}
}
