package compare_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// cand describes one candidate of a hand-built run: its per-trial scores
// (NaN for a trial without a score) and runtimes, and which trials failed.
type cand struct {
	id      string
	scores  []float64
	runtime []float64 // per trial; defaults to 1s each
	failed  map[int]runner.ErrorKind
	cost    []float64 // per trial, in dollars; none when empty
}

// newRecord builds a results.json record from per-trial scores in [0, 1]: the
// standings are scoring's aggregation of them, ranked by mean score.
func newRecord(runID string, started time.Time, winner string, cs ...cand) *record.Record {
	rec := &record.Record{
		SchemaVersion: record.SchemaVersion,
		RunID:         runID,
		Objective:     "Generate weekly AI events",
		Backend:       "local",
		ManifestPath:  "forge.yaml",
		ManifestHash:  "sha256:aaaa",
		StartedAt:     started,
		FinishedAt:    started.Add(4 * time.Second),
		Results:       []record.Trial{},
		Standings:     []record.Standing{},
	}
	if winner != "" {
		rec.Winner = &winner
	}
	for _, c := range cs {
		var rs []record.Trial
		for i, s := range c.scores {
			rt := 1.0
			if i < len(c.runtime) {
				rt = c.runtime[i]
			}
			r := record.Trial{Result: runner.Result{CandidateID: c.id, Trial: i + 1, Backend: "local", Success: true, RuntimeSeconds: rt}}
			if k, bad := c.failed[i+1]; bad {
				r.Failed(k, "failed: "+string(k))
			}
			if !math.IsNaN(s) {
				v := s
				r.Score = &v
			}
			if i < len(c.cost) {
				r.Cost = &record.Cost{USD: c.cost[i], ModelUSD: c.cost[i]}
			}
			rs = append(rs, r)
		}
		rec.Results = append(rec.Results, rs...)
		// The standing as scoring aggregates scored results, never by hand.
		_, byID := record.ByCandidate(rs)
		rec.Standings = append(rec.Standings, scoring.Aggregate(c.id, byID[c.id]))
	}
	sort.SliceStable(rec.Standings, func(i, j int) bool { return rec.Standings[i].Score > rec.Standings[j].Score })
	for i := range rec.Standings {
		rec.Standings[i].Rank = i + 1
	}
	return rec
}

// day is 15:30 UTC on the given day of November 2026.
func day(d int) time.Time { return time.Date(2026, 11, d, 15, 30, 0, 0, time.UTC) }

// repeat is n copies of x.
func repeat(x float64, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = x
	}
	return xs
}

// writeRun writes rec as <root>/<rec.RunID>/results.json.
func writeRun(t testing.TB, root string, rec *record.Record) string {
	t.Helper()
	b, err := record.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, rec.RunID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "results.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.8g, want %.8g (±%g)", what, got, want, tol)
	}
}

// suiteRecord builds a suite's record: every candidate passes every task
// (one trial each) but those failed[c] lists, scored by scoring.ScoreSuite
// as a run is.
func suiteRecord(runID string, started time.Time, tasks []string, failed map[string][]string) *record.Record {
	rec := newRecord(runID, started, "")
	var ids []string
	for id := range failed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var st []scoring.Task
	for _, task := range tasks {
		rec.Tasks = append(rec.Tasks, record.TaskInfo{ID: task, Objective: "task " + task, Weight: 1})
		st = append(st, scoring.Task{ID: task})
	}
	for _, id := range ids {
		for _, task := range tasks {
			r := record.Trial{Result: runner.Result{CandidateID: id, TaskID: task, Trial: 1, Backend: "local", Success: true, RuntimeSeconds: 1}}
			if slices.Contains(failed[id], task) {
				r.Failed(runner.ErrCandidateFailed, "wrong")
			}
			rec.Results = append(rec.Results, r)
		}
	}
	out := scoring.ScoreSuite(scoring.Config{Scorers: []scoring.Scorer{{Type: scoring.TypeSuccess}}},
		scoring.Suite{Candidates: ids, Tasks: st}, rec.Results)
	out.Apply(rec.Results)
	rec.Standings, rec.Winner, rec.WinnerLine = out.Standings, out.Winner, out.WinnerLine
	rec.TaskMatrix, rec.HeadToHead = out.Tasks, out.HeadToHead
	return rec
}
