package report

import (
	"io"

	"github.com/forge-run/forge/forge"
)

// HTML writes a self-contained HTML page.
func HTML(w io.Writer, rec *forge.Record, opts Options) error {
	_, err := prepare(rec, opts)
	return err
}
