package report

import (
	"fmt"
	"io"

	"github.com/forge-run/forge/record"
)

// JSON writes results.json exactly as the run writes it to disk
// (record.Encode), so --format json and the file never differ.
func JSON(w io.Writer, rec *record.Record, opts Options) error {
	if _, err := prepare(rec, opts); err != nil {
		return err
	}
	if err := record.Encode(w, rec); err != nil {
		return fmt.Errorf("write JSON report: %w", err)
	}
	return nil
}
