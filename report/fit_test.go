package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/clipperhouse/displaywidth"

	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/report/internal/fixture"
)

// TestTableFitsTheTerminal: at a terminal's width, bordered or plain, no
// line of the table report is wider than the terminal; what was left out
// or cut is said under the standings with the flag that shows it whole;
// at a wide terminal the notes are whole; Wide ignores the width.
func TestTableFitsTheTerminal(t *testing.T) {
	for _, name := range fixture.Names() {
		for _, width := range []int{60, 80, 200} {
			for _, tty := range []bool{false, true} {
				var buf bytes.Buffer
				if err := report.Table(&buf, fixture.Record(name), report.Options{TTY: tty, Width: width, Now: fixture.Now}); err != nil {
					t.Fatal(err)
				}
				out := buf.String()
				for i, line := range strings.Split(out, "\n") {
					if w := displaywidth.String(line); w > width {
						t.Errorf("%s at %d columns (tty %v): line %d is %d wide:\n%s", name, width, tty, i+1, w, out)
					}
				}
				cut := strings.Contains(out, "notes cut") || strings.Contains(out, "left out")
				if cut && !strings.Contains(out, "--wide, or in forge view") {
					t.Errorf("%s at %d columns: cut without saying how to see it whole:\n%s", name, width, out)
				}
				if width == 200 && cut {
					t.Errorf("%s at 200 columns cut something:\n%s", name, out)
				}
			}
		}
	}
	var narrow, wide bytes.Buffer
	rec := fixture.Record("suite")
	report.Table(&narrow, rec, report.Options{Width: 60, Now: fixture.Now})
	report.Table(&wide, rec, report.Options{Width: 60, Wide: true, Now: fixture.Now})
	if !strings.Contains(narrow.String(), "left out") || !strings.Contains(wide.String(), "KeyError: 'word'") || strings.Contains(wide.String(), "left out") {
		t.Errorf("Wide at 60 columns:\n%s\nnarrow:\n%s", wide.String(), narrow.String())
	}
}
