package report

import (
	"fmt"
	"io"

	"github.com/forge-run/forge/forge"
	"github.com/forge-run/forge/runner"
)

// JSON writes results.json exactly as the run writes it to disk
// (forge.MarshalRecord: indented, trailing newline), so `--format json` and
// the file never differ.
func JSON(w io.Writer, rec *forge.Record, opts Options) error {
	if _, err := prepare(rec, opts); err != nil {
		return err
	}
	if rec.Results == nil {
		// The run writes an empty list, never null; say the same.
		cp := *rec
		cp.Results = []runner.Result{}
		rec = &cp
	}
	b, err := forge.MarshalRecord(rec)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write JSON report: %w", err)
	}
	return nil
}
