package report

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/forge-run/forge/record"
)

// Format is a report format, as spelled on the command line (--format).
type Format string

// The report formats.
const (
	FormatTable    Format = "table"
	FormatJSON     Format = "json"
	FormatMarkdown Format = "markdown"
	FormatJUnit    Format = "junit"
	FormatCSV      Format = "csv"
	FormatHTML     Format = "html"
)

// AllFormats lists every format in the order help text should show them.
func AllFormats() []Format {
	return []Format{FormatTable, FormatJSON, FormatMarkdown, FormatJUnit, FormatCSV, FormatHTML}
}

// ParseFormat reads a --format value, in any case.
func ParseFormat(s string) (Format, error) {
	names := map[string]Format{
		"table": FormatTable, "text": FormatTable, "json": FormatJSON, "markdown": FormatMarkdown, "md": FormatMarkdown,
		"junit": FormatJUnit, "xml": FormatJUnit, "csv": FormatCSV, "html": FormatHTML, "htm": FormatHTML,
	}
	if f, ok := names[strings.ToLower(strings.TrimSpace(s))]; ok {
		return f, nil
	}
	return "", fmt.Errorf("unknown report format %q: want one of %s", s, formatList())
}

// FormatFromPath picks a --report file's format by its extension.
func FormatFromPath(path string) (Format, error) {
	exts := map[string]Format{
		".json": FormatJSON, ".md": FormatMarkdown, ".markdown": FormatMarkdown, ".xml": FormatJUnit,
		".csv": FormatCSV, ".html": FormatHTML, ".htm": FormatHTML, ".txt": FormatTable,
	}
	ext := strings.ToLower(filepath.Ext(path))
	if f, ok := exts[ext]; ok {
		return f, nil
	}
	if ext == "" {
		return "", fmt.Errorf("report file %q has no extension: name it .json, .md, .xml, .csv, .html or .txt", path)
	}
	return "", fmt.Errorf("report file %q: unknown extension %q: want .json, .md, .xml, .csv, .html or .txt", path, ext)
}

func formatList() string {
	var s []string
	for _, f := range AllFormats() {
		s = append(s, string(f))
	}
	return strings.Join(s, ", ")
}

// DefaultMaxOutputBytes is how much of each output a report shows by default.
const DefaultMaxOutputBytes = 64 << 10

// Options say how to render a report; the zero value is valid.
type Options struct {
	// TTY: the report goes to a terminal, so the table gets borders.
	TTY bool
	// Color asks for ANSI colour; the caller decides (NO_COLOR, no TTY).
	Color bool
	// Now is the clock for timestamps the record lacks; nil means time.Now.
	Now func() time.Time
	// MaxOutputBytes caps each output a report embeds (0: the default).
	MaxOutputBytes int
	// Matrix makes the table print a suite's per-task matrix whatever its
	// size; else only when it fits in Width columns (0: unknown).
	Matrix bool
	Width  int
	// Wide draws the table as wide as it comes, every note whole, whatever
	// Width.
	Wide bool
	// RunDir is the run's directory seen from where the report is written
	// ("." inside it); the HTML and Markdown reports then link each trial's
	// stored files. "" means unknown: files are named, not linked.
	RunDir string
}

// Validate reports options no report can honour.
func (o Options) Validate() error {
	if o.MaxOutputBytes < 0 {
		return fmt.Errorf("report options: MaxOutputBytes is %d, must be 0 (default) or more", o.MaxOutputBytes)
	}
	return nil
}

// WriteFunc renders one format of rec to w.
type WriteFunc func(w io.Writer, rec *record.Record, opts Options) error

// For returns the function that writes format f.
func For(f Format) (WriteFunc, error) {
	writers := map[Format]WriteFunc{
		FormatTable: Table, FormatJSON: JSON, FormatMarkdown: Markdown, FormatJUnit: JUnit, FormatCSV: CSV, FormatHTML: HTML,
	}
	if fn, ok := writers[f]; ok {
		return fn, nil
	}
	return nil, fmt.Errorf("unknown report format %q: want one of %s", string(f), formatList())
}

// Write renders rec to w in format f.
func Write(f Format, w io.Writer, rec *record.Record, opts Options) error {
	fn, err := For(f)
	if err != nil {
		return err
	}
	return fn(w, rec, opts)
}

// errNilRecord is returned by every format for a nil record.
var errNilRecord = errors.New("report: no record to render (nil *record.Record)")

// prepare checks the arguments every format shares and fills defaults.
func prepare(rec *record.Record, opts Options) (Options, error) {
	if rec == nil {
		return opts, errNilRecord
	}
	if err := opts.Validate(); err != nil {
		return opts, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.MaxOutputBytes = cmp.Or(opts.MaxOutputBytes, DefaultMaxOutputBytes)
	return opts, nil
}
