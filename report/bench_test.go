package report_test

import (
	"bytes"
	"io"
	"testing"

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
