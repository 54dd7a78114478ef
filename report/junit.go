package report

import (
	"bytes"
	"fmt"
	"io"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report/junit"
)

// JUnit writes the run as JUnit XML (package junit), with the plain
// standings table as the suite's system-out.
func JUnit(w io.Writer, rec *record.Record, opts Options) error {
	opts, err := prepare(rec, opts)
	if err != nil {
		return err
	}
	var summary bytes.Buffer
	if err := Table(&summary, rec, Options{Now: opts.Now, MaxOutputBytes: opts.MaxOutputBytes}); err != nil {
		return fmt.Errorf("JUnit report summary: %w", err)
	}
	return junit.Write(w, rec, junit.Config{
		Now:            opts.Now,
		MaxOutputBytes: opts.MaxOutputBytes,
		Summary:        summary.String(),
		Notes: func(r *record.Trial) (string, string) {
			return stdoutFile(r).Sentence(), stderrFile(r).Sentence()
		},
	})
}
