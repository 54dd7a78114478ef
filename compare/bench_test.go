package compare_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/forge-run/forge/compare"
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
	base := record("base", day(20), "", nightly(20, 50, 20)...)
	head := record("head", day(21), "", nightly(21, 50, 20)...)
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
		rec := record(fmt.Sprintf("run-%03d", d), day(1).AddDate(0, 0, d), "cand-000", nightly(d, 5, 3)...)
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
