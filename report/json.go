package report

import (
	"fmt"
	"io"

	"github.com/forge-run/forge/forge"
)

// JSON writes results.json exactly as the run writes it to disk
// (forge.EncodeRecord), so --format json and the file never differ.
func JSON(w io.Writer, rec *forge.Record, opts Options) error {
	if _, err := prepare(rec, opts); err != nil {
		return err
	}
	if err := forge.EncodeRecord(w, rec); err != nil {
		return fmt.Errorf("write JSON report: %w", err)
	}
	return nil
}
