package report_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/forge-run/forge/internal/testkit/golden"
	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/report/internal/fixture"
)

// goldenCase is one rendering: a format with its options.
type goldenCase struct {
	name   string // file suffix
	format report.Format
	opts   report.Options
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{"table.txt", report.FormatTable, report.Options{}},
		{"table-tty.txt", report.FormatTable, report.Options{TTY: true}},
		{"table-color.txt", report.FormatTable, report.Options{TTY: true, Color: true}},
		{"md", report.FormatMarkdown, report.Options{}},
		{"junit.xml", report.FormatJUnit, report.Options{}},
		{"csv", report.FormatCSV, report.Options{}},
		{"html", report.FormatHTML, report.Options{}},
		{"json", report.FormatJSON, report.Options{}},
	}
}

// render writes fixture name in format c with the fixed clock.
func render(t *testing.T, name string, c goldenCase) []byte {
	t.Helper()
	rec := fixture.Record(name)
	if rec == nil {
		t.Fatalf("no fixture %q", name)
	}
	opts := c.opts
	opts.Now = fixture.Now
	var buf bytes.Buffer
	if err := report.Write(c.format, &buf, rec, opts); err != nil {
		t.Fatalf("render %s as %s: %v", name, c.format, err)
	}
	return buf.Bytes()
}

// TestGolden renders every fixture in every format and compares it with
// testdata/<fixture>.<format>; run with -update to accept new output.
func TestGolden(t *testing.T) {
	for _, name := range fixture.Names() {
		for _, c := range goldenCases() {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				got := render(t, name, c)
				path := filepath.Join("testdata", name+"."+c.name)
				golden.Check(t, path, got)
			})
		}
	}
}
