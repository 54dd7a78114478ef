package report_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/report/internal/fixture"
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

// BenchmarkValidateRecord checks a results.json against its schema,
// compiling the schema each time as ValidateRecord does.
func BenchmarkValidateRecord(b *testing.B) {
	var buf bytes.Buffer
	if err := report.JSON(&buf, fixture.Record("five-trials-tie-timeout"), report.Options{}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := report.ValidateRecord(buf.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}
