package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/report/internal/fixture"
)

// TestWrongAnswersAreCalledWrong: a trial that ran to its end with a
// failed check is "wrong" (never "ok") in the table's status and notes,
// with what the check expected and got, and listed in the Markdown and
// HTML reports.
func TestWrongAnswersAreCalledWrong(t *testing.T) {
	rec := fixture.Record("one-trial-winner")
	r := &rec.Results[0]
	if !r.Success {
		t.Fatalf("fixture: the first trial failed")
	}
	score := 0.0
	r.Score = &score
	r.Checks = []record.CheckResult{{Name: "artifact", Of: 2, Failed: []record.CheckFailure{
		{Check: "equals_task: expected", Want: "391", Got: "392"}, {Check: `contains: "total"`, Want: `contains "total"`, Got: "392"}}}}
	if s, h := report.TrialStatus(r); s != "wrong" || h != "partial" {
		t.Errorf("status %q %q", s, h)
	}
	for f, want := range map[report.Format][]string{
		report.FormatTable:    {" wrong ", `wrong: wanted "391", got "392"`},
		report.FormatMarkdown: {"1 wrong answer", `wanted "391", got "392" (equals\_task: expected; 2 of 2 checks failed) (score 0.00)`, "⚠️ wrong"},
		report.FormatHTML:     {"wrong: wanted &#34;391&#34;"},
	} {
		var b bytes.Buffer
		if err := report.Write(f, &b, rec, report.Options{Now: fixture.Now}); err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s report lacks %q:\n%s", f, w, b.String())
			}
		}
	}
}
