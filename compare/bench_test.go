package compare_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// nightly builds a run of n candidates × trials with scores that drift by
// day.
func nightly(dayN, n, trials int) []cand {
	cs := make([]cand, n)
	for i := range cs {
		scores := make([]float64, trials)
		for j := range scores {
			scores[j] = float64((i*7+j*3+dayN)%100) / 100
		}
		cs[i] = cand{id: fmt.Sprintf("cand-%03d", i), scores: scores}
	}
	return cs
}

// BenchmarkRuns compares two runs of 50 candidates × 20 trials and renders
// the table.
func BenchmarkRuns(b *testing.B) {
	base := newRecord("base", day(20), "", nightly(20, 50, 20)...)
	head := newRecord("head", day(21), "", nightly(21, 50, 20)...)
	b.ReportAllocs()
	for b.Loop() {
		rep := compare.Runs(base, head)
		if err := compare.WriteTable(io.Discard, rep, false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHistory lists a year of nightly runs (365 × 5 candidates × 3
// trials).
func BenchmarkHistory(b *testing.B) {
	out := b.TempDir()
	for d := range 365 {
		rec := newRecord(fmt.Sprintf("run-%03d", d), day(1).AddDate(0, 0, d), "cand-000", nightly(d, 5, 3)...)
		writeRun(b, out, rec)
	}
	b.ReportAllocs()
	for b.Loop() {
		es, err := compare.History(out, 0)
		if err != nil || len(es) != 365 {
			b.Fatalf("History = %d entries, %v", len(es), err)
		}
		if err := compare.WriteHistory(io.Discard, es); err != nil {
			b.Fatal(err)
		}
	}
}

// largeSuite is a run of a suite at real benchmark size: candidates ×
// tasks, one trial each, judged between 0 and 1 (some trials fail, and
// the scores drift with day), scored by scoring.ScoreSuite as a run is.
func largeSuite(runID string, dayN, candidates, tasks int) *record.Record {
	rec := newRecord(runID, day(dayN), "")
	ids := make([]string, candidates)
	for i := range ids {
		ids[i] = fmt.Sprintf("cand-%d", i+1)
	}
	st := make([]scoring.Task, tasks)
	rec.Tasks = make([]record.TaskInfo, tasks)
	for t := range st {
		id := fmt.Sprintf("task-%05d", t+1)
		st[t] = scoring.Task{ID: id}
		rec.Tasks[t] = record.TaskInfo{ID: id, Objective: "task " + id, Weight: 1}
	}
	rec.Results = make([]record.Trial, 0, candidates*tasks)
	for ci, id := range ids {
		for t := range st {
			h := (t*7919 + ci*104729 + dayN*31) % 1000
			r := record.Trial{Result: runner.Result{CandidateID: id, TaskID: st[t].ID, Trial: 1, Backend: "local", Success: true,
				RuntimeSeconds: 0.5 + float64(h%40)/10}}
			if h < 80+40*ci {
				r.Failed(runner.ErrCandidateFailed, "KeyError: 'answer'")
			} else {
				s := float64(h%101) / 100
				r.Judges = []record.JudgeResult{{Name: "quality", Score: &s}}
			}
			rec.Results = append(rec.Results, r)
		}
	}
	cfg := scoring.Config{Scorers: []scoring.Scorer{{Type: scoring.TypeJudge, Name: "quality", Command: []string{"judge"}}}}
	out := scoring.ScoreSuite(cfg, scoring.Suite{Candidates: ids, Tasks: st}, rec.Results)
	out.Apply(rec.Results)
	rec.Standings, rec.Winner, rec.WinnerLine = out.Standings, out.Winner, out.WinnerLine
	rec.TaskMatrix, rec.HeadToHead = out.Tasks, out.HeadToHead
	return rec
}

// BenchmarkRunsLarge compares two runs of 4 candidates × 25,000 tasks
// (100,000 results each) and renders the comparison in every format; open
// reads one such results.json (record.Read). The target (issue 19):
// compare of two such runs within seconds on 2 cores. Measured (commit
// 0afbb1a): Runs 0.10 s, table and Markdown under 1 ms, JSON 20 ms
// (7.9 MB: every changed task); open 3.1 s, which is record.Read's.
func BenchmarkRunsLarge(b *testing.B) {
	base := largeSuite("base", 20, 4, 25000)
	head := largeSuite("head", 21, 4, 25000)
	formats := []struct {
		name  string
		write func(io.Writer, compare.Report) error
	}{
		{"table", func(w io.Writer, r compare.Report) error { return compare.WriteTable(w, r, false) }},
		{"markdown", compare.WriteMarkdown},
		{"json", func(w io.Writer, r compare.Report) error { return json.NewEncoder(w).Encode(r) }},
	}
	b.Run("runs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			compare.Runs(base, head)
		}
	})
	rep := compare.Runs(base, head)
	for _, f := range formats {
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				var buf bytes.Buffer
				if err := f.write(&buf, rep); err != nil {
					b.Fatal(err)
				}
				n = buf.Len()
			}
			b.ReportMetric(float64(n), "out-bytes")
		})
	}
	b.Run("open", func(b *testing.B) {
		dir := b.TempDir()
		writeRun(b, dir, base)
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := compare.Open("base", dir); err != nil {
				b.Fatal(err)
			}
		}
	})
}
