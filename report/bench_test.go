package report_test

import (
	"bytes"
	"io"
	"sync"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/report/internal/fixture"
	"github.com/forge-run/forge/schema"
)

// BenchmarkWrite renders the five-trial fixture (3 candidates × 5 trials) in
// each format.
func BenchmarkWrite(b *testing.B) {
	rec := fixture.Record("five-trials-tie-timeout")
	for _, f := range report.AllFormats() {
		b.Run(string(f), func(b *testing.B) {
			opts := report.Options{TTY: true, Now: fixture.Now}
			for b.Loop() {
				if err := report.Write(f, io.Discard, rec, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateResults checks a results.json against its schema,
// compiling the schema each time as schema.ValidateResults does.
func BenchmarkValidateResults(b *testing.B) {
	var buf bytes.Buffer
	if err := report.JSON(&buf, fixture.Record("five-trials-tie-timeout"), report.Options{}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := schema.ValidateResults(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}

// The suites of issue 19 (reports at real benchmark sizes), built once.
var (
	largeOnce  sync.Once
	largeSuite *record.Record // 4 candidates × 25,000 tasks × 1 trial, schema 3
	largeLogs  *record.Record // 2 candidates × 2,000 tasks, 20 KB of stdout each, schema 3
	largeOld   *record.Record // the same as largeLogs with the whole output and no paths (schema 2)
)

func largeRecords() {
	largeOnce.Do(func() {
		largeSuite = fixture.Large(fixture.LargeSpec{Candidates: 4, Tasks: 25000, Trials: 1, StdoutBytes: 300, Excerpts: true})
		largeLogs = fixture.Large(fixture.LargeSpec{Candidates: 2, Tasks: 2000, Trials: 1, StdoutBytes: 20000, Excerpts: true})
		largeOld = fixture.Large(fixture.LargeSpec{Candidates: 2, Tasks: 2000, Trials: 1, StdoutBytes: 20000})
	})
}

// countingWriter counts what a report writes.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkWriteLarge renders suites of real benchmark size in each format:
// 100,000 results (4 × 25,000 tasks), and 4,000 results whose stdout is 20
// KB each, with excerpts (schema 3) and whole (schema 2). out-bytes is the
// report's size.
//
// The target (issue 19): every format well under 2 s for 100,000 results
// on 2 cores, and the human-readable reports small whatever the run's
// size: the table and Markdown a few KB, the HTML a few hundred KB (it
// summarises a run of more than 500 trials). JSON, JUnit and CSV are per
// trial by nature; each trial's share is bounded by the record's excerpts
// (schema 3) and Options.MaxOutputBytes. Measured on 2 cores (commit
// 0afbb1a): 100k table 33 ms, JSON 1.3 s (166 MB), Markdown 14 ms (14 KB),
// JUnit 0.47 s (67 MB), CSV 83 ms (14 MB), HTML 31 ms (245 KB).
func BenchmarkWriteLarge(b *testing.B) {
	largeRecords()
	for _, rc := range []struct {
		name string
		rec  *record.Record
	}{{"100k", largeSuite}, {"4k-20KB", largeLogs}, {"4k-20KB-v2", largeOld}} {
		for _, f := range report.AllFormats() {
			b.Run(rc.name+"/"+string(f), func(b *testing.B) {
				opts := report.Options{Now: fixture.Now}
				b.ReportAllocs()
				var w countingWriter
				for b.Loop() {
					w.n = 0
					if err := report.Write(f, &w, rc.rec, opts); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(w.n), "out-bytes")
			})
		}
	}
}
