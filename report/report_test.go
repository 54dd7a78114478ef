package report_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/report/internal/fixture"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/schema"
)

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]report.Format{
		"table": report.FormatTable, "JSON": report.FormatJSON, " markdown ": report.FormatMarkdown,
		"md": report.FormatMarkdown, "junit": report.FormatJUnit, "xml": report.FormatJUnit,
		"csv": report.FormatCSV, "html": report.FormatHTML,
	} {
		got, err := report.ParseFormat(in)
		if err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yaml", "tables"} {
		if _, err := report.ParseFormat(in); err == nil || !strings.Contains(err.Error(), "table, json, markdown, junit, csv, html") {
			t.Errorf("ParseFormat(%q) error = %v; want one naming the formats", in, err)
		}
	}
}

func TestFormatFromPath(t *testing.T) {
	for in, want := range map[string]report.Format{
		"out/results.json": report.FormatJSON, "summary.md": report.FormatMarkdown, "junit.XML": report.FormatJUnit,
		"r.csv": report.FormatCSV, "/tmp/report.html": report.FormatHTML, "r.htm": report.FormatHTML,
		"standings.txt": report.FormatTable,
	} {
		got, err := report.FormatFromPath(in)
		if err != nil || got != want {
			t.Errorf("FormatFromPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"report", "report.pdf", "dir.d/report"} {
		_, err := report.FormatFromPath(in)
		if err == nil || !strings.Contains(err.Error(), in) {
			t.Errorf("FormatFromPath(%q) error = %v; want one naming the file", in, err)
		}
	}
}

// TestEveryFormatHasAWriter keeps the switch and the list in step.
func TestEveryFormatHasAWriter(t *testing.T) {
	for _, f := range report.AllFormats() {
		if _, err := report.For(f); err != nil {
			t.Errorf("For(%q): %v", f, err)
		}
		if _, err := report.ParseFormat(string(f)); err != nil {
			t.Errorf("ParseFormat(%q): %v", f, err)
		}
	}
	if err := report.Write("pdf", io.Discard, fixture.Record("one-trial-winner"), report.Options{}); err == nil {
		t.Error("Write with an unknown format succeeded")
	}
}

func TestBadArguments(t *testing.T) {
	for _, f := range report.AllFormats() {
		if err := report.Write(f, io.Discard, nil, report.Options{}); err == nil {
			t.Errorf("%s: a nil record rendered without error", f)
		}
		err := report.Write(f, io.Discard, fixture.Record("one-trial-winner"), report.Options{MaxOutputBytes: -1})
		if err == nil || !strings.Contains(err.Error(), "MaxOutputBytes") {
			t.Errorf("%s: negative MaxOutputBytes: error = %v", f, err)
		}
	}
}

type failingWriter struct{}

var errDiskFull = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errDiskFull }

// TestWriteErrorsArePassedOn: a report that cannot be written must say so.
func TestWriteErrorsArePassedOn(t *testing.T) {
	for _, f := range report.AllFormats() {
		err := report.Write(f, failingWriter{}, fixture.Record("five-trials-tie-timeout"), report.Options{Now: fixture.Now})
		if !errors.Is(err, errDiskFull) {
			t.Errorf("%s: error = %v; want it to wrap the writer's error", f, err)
		}
	}
}

func renderString(t *testing.T, f report.Format, rec *record.Record, opts report.Options) string {
	t.Helper()
	if opts.Now == nil {
		opts.Now = fixture.Now
	}
	var buf bytes.Buffer
	if err := report.Write(f, &buf, rec, opts); err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	return buf.String()
}

// TestJSONIsResultsJSON: --format json prints the very bytes the run writes to
// results.json, and they validate against the published schema.
func TestJSONIsResultsJSON(t *testing.T) {
	for _, name := range fixture.Names() {
		t.Run(name, func(t *testing.T) {
			rec := fixture.Record(name)
			got := renderString(t, report.FormatJSON, rec, report.Options{})
			want, err := record.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("JSON report differs from record.Marshal:\n%s\n---\n%s", got, want)
			}
			if !strings.HasSuffix(got, "}\n") || !strings.HasPrefix(got, fmt.Sprintf("{\n  \"schema_version\": %d,", record.SchemaVersion)) {
				t.Errorf("JSON report is not indented with a trailing newline:\n%.80s", got)
			}
			if err := schema.ValidateResults([]byte(got)); err != nil {
				t.Errorf("the JSON report does not validate against results.schema.json: %v", err)
			}
			var back record.Record
			if err := json.Unmarshal([]byte(got), &back); err != nil {
				t.Fatal(err)
			}
			if len(back.Results) != len(rec.Results) || len(back.Standings) != len(rec.Standings) || back.RunID != rec.RunID {
				t.Errorf("round trip lost data: %d results, %d standings", len(back.Results), len(back.Standings))
			}
		})
	}
}

func TestJSONNilResultsIsEmptyList(t *testing.T) {
	rec := &record.Record{SchemaVersion: 1, RunID: "r1"}
	got := renderString(t, report.FormatJSON, rec, report.Options{})
	if !strings.Contains(got, `"results": []`) {
		t.Errorf("nil results not written as []:\n%s", got)
	}
	if err := schema.ValidateResults([]byte(got)); err != nil {
		t.Error(err)
	}
	if rec.Results != nil {
		t.Error("JSON changed the caller's record")
	}
}

func TestSchemaRejectsAPartialRecord(t *testing.T) {
	err := schema.ValidateResults([]byte(`{"schema_version": 1, "run_id": "x"}`))
	if err == nil || !strings.Contains(err.Error(), "results") {
		t.Errorf("a record missing most fields validated, or the error does not say what: %v", err)
	}
}

func isBoxDrawing(r rune) bool { return r >= 0x2500 && r <= 0x257F }

func TestTablePlainHasNoBoxDrawingOrColour(t *testing.T) {
	for _, name := range fixture.Names() {
		plain := renderString(t, report.FormatTable, fixture.Record(name), report.Options{Color: false})
		if strings.ContainsFunc(plain, isBoxDrawing) {
			t.Errorf("%s: plain table has box-drawing characters:\n%s", name, plain)
		}
		if strings.Contains(plain, "\x1b") {
			t.Errorf("%s: plain table has escape sequences", name)
		}
		for _, line := range strings.Split(plain, "\n") {
			if strings.HasSuffix(line, " ") {
				t.Errorf("%s: trailing spaces in %q", name, line)
			}
		}
		tty := renderString(t, report.FormatTable, fixture.Record(name), report.Options{TTY: true})
		if !strings.ContainsFunc(tty, isBoxDrawing) {
			t.Errorf("%s: terminal table has no border", name)
		}
		if strings.Contains(tty, "\x1b") {
			t.Errorf("%s: colour without Color", name)
		}
		color := renderString(t, report.FormatTable, fixture.Record(name), report.Options{TTY: true, Color: true})
		if !strings.Contains(color, "\x1b[") {
			t.Errorf("%s: Color gave no colour", name)
		}
	}
}

// TestTableColumnsAlign: in the plain table every row's columns start where
// the header's do, whatever the width of the characters in the cells.
func TestTableColumnsAlign(t *testing.T) {
	out := renderString(t, report.FormatTable, fixture.Record("five-trials-tie-timeout"), report.Options{})
	lines := strings.Split(out, "\n")
	header := lines[0]
	col := utf8.RuneCountInString(header[:strings.Index(header, "CANDIDATE")])
	for _, l := range lines[1:4] {
		runes := []rune(l)
		if len(runes) <= col || runes[col-1] != ' ' || runes[col] == ' ' {
			t.Errorf("CANDIDATE column does not line up at rune %d:\n%s\n%s", col, header, l)
		}
	}
}

func TestTableSummaries(t *testing.T) {
	tie := renderString(t, report.FormatTable, fixture.Record("five-trials-tie-timeout"), report.Options{})
	for _, want := range []string{
		"=1  alpha", "=1  beta", "timeout 1/5", "no artifact 2/5", "80% (4/5)", "0.81 ± 0.02", "3.2s ± 0.3s",
		"#4: timed out after 10s", "no clear winner: alpha and beta overlap (0.81 ± 0.02 vs 0.66 [0.24–0.92], p = 0.4)", "sb-beta-4",
	} {
		if !strings.Contains(tie, want) {
			t.Errorf("five-trial table lacks %q:\n%s", want, tie)
		}
	}
	one := renderString(t, report.FormatTable, fixture.Record("one-trial-winner"), report.Options{})
	for _, want := range []string{" 0.87 ", "3.2s ", "72 B", "100% (1/1)", "failed", "winner: alpha (0.87), 1.40× beta"} {
		if !strings.Contains(one, want) {
			t.Errorf("one-trial table lacks %q:\n%s", want, one)
		}
	}
	if strings.Contains(one, "±") {
		t.Errorf("one-trial table shows an interval:\n%s", one)
	}
	// The table's SCORE column and scoring's winner line write a score alike.
	for id, score := range map[string]string{"alpha": "0.81 ± 0.02", "beta": "0.66 [0.24–0.92]"} {
		row, line := "", ""
		for _, l := range strings.Split(tie, "\n") {
			switch {
			case strings.Contains(l, "overlap"):
				line = l
			case strings.Contains(l, " "+id+" "):
				row = l
			}
		}
		if !strings.Contains(row, score) || !strings.Contains(line, score) {
			t.Errorf("%s: row %q and winner line %q should both read %q", id, row, line, score)
		}
	}
	nobody := fixture.Record("nobody-succeeded")
	none := renderString(t, report.FormatTable, nobody, report.Options{})
	for _, want := range []string{"incomplete: gamma did not run (cancelled: cancelled before it finished)", "interrupted", "cancelled", "timeout"} {
		if !strings.Contains(none, want) {
			t.Errorf("nobody-succeeded table lacks %q:\n%s", want, none)
		}
	}
	nobody.WinnerLine = "" // a record without scoring's line: the table says it itself
	if none = renderString(t, report.FormatTable, nobody, report.Options{}); !strings.Contains(none, "winner: none — no candidate succeeded") {
		t.Errorf("nobody-succeeded table without a winner line lacks %q:\n%s", "winner: none — no candidate succeeded", none)
	}
	b64 := renderString(t, report.FormatTable, fixture.Record("base64-artifact"), report.Options{})
	if !strings.Contains(b64, "4.0 KiB") || !strings.Contains(b64, "98 B") {
		t.Errorf("artifact sizes wrong:\n%s", b64)
	}
}

// TestTableWithoutStandings: a run interrupted before scoring still gets a
// table, computed from its results.
func TestTableWithoutStandings(t *testing.T) {
	rec := fixture.Record("five-trials-tie-timeout")
	rec.Standings = nil
	out := renderString(t, report.FormatTable, rec, report.Options{})
	for _, want := range []string{"-  alpha", "-  beta", "80% (4/5)", "timeout 1/5"} {
		if !strings.Contains(out, want) {
			t.Errorf("table without standings lacks %q:\n%s", want, out)
		}
	}
	empty := renderString(t, report.FormatTable, &record.Record{RunID: "r"}, report.Options{})
	if !strings.Contains(empty, "no results") || !strings.Contains(empty, "no candidate succeeded") {
		t.Errorf("empty record:\n%s", empty)
	}
}

// TestMarkdownEscapes: text from candidates cannot add table cells or markup.
func TestMarkdownEscapes(t *testing.T) {
	rec := fixture.Record("invalid-utf8")
	rec.Results[1].ErrorMessage = "a | b `c` *d* <img src=x onerror=alert(1)> [link](http://x) \xff"
	md := renderString(t, report.FormatMarkdown, rec, report.Options{})
	if !utf8.ValidString(md) {
		t.Error("Markdown is not valid UTF-8")
	}
	if strings.Contains(md, "<img") || strings.Contains(md, "<b>") {
		t.Errorf("HTML from the record reached the Markdown:\n%s", md)
	}
	cells := -1
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		n := strings.Count(line, "|") - strings.Count(line, `\|`)
		if cells == -1 {
			cells = n
		} else if n != cells {
			t.Errorf("table row has %d cell separators, header has %d:\n%s", n, cells, line)
		}
	}
	if cells != 10 {
		t.Errorf("header has %d separators; want 10 (9 columns)", cells)
	}
	for _, want := range []string{`a \| b \` + "`c\\` \\*d\\*", "&lt;img", `\[link\]`, "🏆 **winner: alpha"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestMarkdownFailuresAndWarnings(t *testing.T) {
	md := renderString(t, report.FormatMarkdown, fixture.Record("five-trials-tie-timeout"), report.Options{})
	for _, want := range []string{"<details><summary>3 failures</summary>", "**beta#4** — timeout: timed out after 10s",
		"[!CAUTION]", "`sb-beta-4`", "no clear winner: alpha and beta overlap"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	none := renderString(t, report.FormatMarkdown, fixture.Record("nobody-succeeded"), report.Options{})
	if !strings.Contains(none, "[!WARNING]") || strings.Contains(none, "🏆") {
		t.Errorf("nobody-succeeded Markdown:\n%s", none)
	}
}

func TestCSVRoundTrip(t *testing.T) {
	for _, name := range fixture.Names() {
		rec := fixture.Record(name)
		out := renderString(t, report.FormatCSV, rec, report.Options{})
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil {
			t.Fatalf("%s: CSV does not parse: %v", name, err)
		}
		if len(rows) != len(rec.Results)+1 {
			t.Fatalf("%s: %d rows; want a header and %d results", name, len(rows), len(rec.Results))
		}
		want := []string{"candidate_id", "trial", "success", "exit_code", "error_kind", "runtime_seconds", "score", "artifact_bytes", "sandbox_id", "error_message",
			"stdout_path", "stderr_path", "artifact_path", "tokens", "cost_usd", "cost_unpriced"}
		if len(rec.Tasks) > 0 {
			want = slices.Insert(want, 1, "task_id")
			want = slices.Insert(want, 4, "passed")
		}
		if strings.Join(rows[0], ",") != strings.Join(want, ",") {
			t.Errorf("%s: header %v", name, rows[0])
		}
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		for i, r := range rec.Results {
			row := rows[i+1]
			cell := func(h string) string { return row[col[h]] }
			if cell("candidate_id") != r.CandidateID || cell("success") != strconv.FormatBool(r.Success) ||
				cell("error_kind") != string(r.ErrorKind) || (len(rec.Tasks) > 0 && cell("task_id") != r.TaskID) {
				t.Errorf("%s row %d = %v; result %+v", name, i+1, row, r)
			}
			if cell("artifact_path") != r.ArtifactPath || cell("stdout_path") != r.OutputPath || cell("stderr_path") != r.StderrPath {
				t.Errorf("%s row %d: the stored files' paths are not the record's: %v", name, i+1, row)
			}
			if (r.ExitCode == nil) != (cell("exit_code") == "") || (r.Score == nil) != (cell("score") == "") {
				t.Errorf("%s row %d: null exit code or score not written as an empty cell: %v", name, i+1, row)
			}
			if !utf8.ValidString(strings.Join(row, "")) {
				t.Errorf("%s row %d is not valid UTF-8", name, i+1)
			}
		}
	}
}

// junitDoc is enough of the JUnit document to check what the report says.
type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Skipped  int `xml:"skipped,attr"`
	Suites   []struct {
		Timestamp string `xml:"timestamp,attr"`
		Cases     []struct {
			Classname string `xml:"classname,attr"`
			Name      string `xml:"name,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Type    string `xml:"type,attr"`
				Message string `xml:"message,attr"`
			} `xml:"failure"`
			Skipped   *struct{} `xml:"skipped"`
			SystemOut string    `xml:"system-out"`
		} `xml:"testcase"`
		SystemOut string `xml:"system-out"`
	} `xml:"testsuite"`
}

func TestJUnitThroughWrite(t *testing.T) {
	out := renderString(t, report.FormatJUnit, fixture.Record("five-trials-tie-timeout"), report.Options{})
	var doc junitDoc
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v", err)
	}
	if doc.Tests != 15 || doc.Failures != 3 || len(doc.Suites) != 1 || len(doc.Suites[0].Cases) != 15 {
		t.Fatalf("tests=%d failures=%d suites=%d", doc.Tests, doc.Failures, len(doc.Suites))
	}
	c := doc.Suites[0].Cases[8]
	if c.Classname != "beta" || c.Name != "beta#4" || c.Time != "10.000" || c.Failure == nil ||
		c.Failure.Type != "timeout" || c.Failure.Message != "timed out after 10s" {
		t.Errorf("beta#4 = %+v", c)
	}
	if !strings.Contains(doc.Suites[0].SystemOut, "timeout 1/5") {
		t.Errorf("suite system-out lacks the standings:\n%s", doc.Suites[0].SystemOut)
	}

	// Output is capped at MaxOutputBytes.
	rec := fixture.Record("one-trial-winner")
	rec.Results[0].Output = strings.Repeat("é", 5000)
	out = renderString(t, report.FormatJUnit, rec, report.Options{MaxOutputBytes: 101})
	doc = junitDoc{}
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	so := doc.Suites[0].Cases[0].SystemOut
	kept, _, _ := strings.Cut(so, "\n…")
	if len(kept) > 101 || !utf8.ValidString(so) || !strings.Contains(so, "more bytes not shown") {
		t.Errorf("system-out not capped at 101 bytes on a rune boundary with a note: %d bytes, %q", len(kept), so[len(kept):])
	}
}

// TestJUnitTimestampFromClock: the suite is stamped with the run's start, or
// by the injected clock when the record has none, never the wall clock.
func TestJUnitTimestampFromClock(t *testing.T) {
	stamp := func(rec *record.Record) string {
		var doc junitDoc
		if err := xml.Unmarshal([]byte(renderString(t, report.FormatJUnit, rec, report.Options{})), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Suites[0].Timestamp
	}
	rec := fixture.Record("one-trial-winner")
	if got := stamp(rec); got != "2026-11-21T15:30:00Z" {
		t.Errorf("timestamp %q; want the run's start", got)
	}
	rec.StartedAt, rec.FinishedAt = time.Time{}, time.Time{}
	if got, want := stamp(rec), fixture.Now().Format(time.RFC3339); got != want {
		t.Errorf("timestamp %q; want the injected clock's %q", got, want)
	}
}

// TestReportsCarryNoInvalidUTF8 renders the fixture full of bad bytes in
// every text format.
func TestReportsCarryNoInvalidUTF8(t *testing.T) {
	rec := fixture.Record("invalid-utf8")
	for _, f := range report.AllFormats() {
		out := renderString(t, f, rec, report.Options{TTY: true, Color: true})
		if !utf8.ValidString(out) {
			t.Errorf("%s report is not valid UTF-8", f)
		}
	}
}

// TestHTMLEscapes: nothing from the record reaches the page as markup, and
// the page loads nothing from elsewhere.
func TestHTMLEscapes(t *testing.T) {
	rec := fixture.Record("invalid-utf8")
	page := renderString(t, report.FormatHTML, rec, report.Options{})
	for _, bad := range []string{"<script", "<b>bold", "<tag>", "http://", "https://", "@import", "src=\"//"} {
		if strings.Contains(page, bad) {
			t.Errorf("HTML report contains %q", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;b&gt;bold&lt;/b&gt;", "<svg class=\"chart\"", "<details"} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	b64 := renderString(t, report.FormatHTML, fixture.Record("base64-artifact"), report.Options{})
	if n := strings.Count(b64, `src="data:image/png;base64,`); n != 1 {
		t.Errorf("%d inline images; want 1 (the whole PNG, not the one forge cut)", n)
	}
}

// TestHTMLCapsOutput: a huge stdout is cut to MaxOutputBytes.
func TestHTMLCapsOutput(t *testing.T) {
	rec := fixture.Record("one-trial-winner")
	rec.Results[0].Output = strings.Repeat("x", 1<<20)
	page := renderString(t, report.FormatHTML, rec, report.Options{MaxOutputBytes: 1000})
	if len(page) > 100_000 || !strings.Contains(page, "more bytes not shown") {
		t.Errorf("page is %d bytes; the 1 MiB output was not capped with a note", len(page))
	}
}

func TestRunnerKindsHaveLabels(t *testing.T) {
	rec := fixture.Record("one-trial-winner")
	for _, k := range []runner.ErrorKind{runner.ErrInfra, runner.ErrAuth} {
		rec.Results[2].ErrorKind = k
		out := renderString(t, report.FormatTable, rec, report.Options{})
		if !strings.Contains(out, string(k)+" error") {
			t.Errorf("kind %s not labelled:\n%s", k, out)
		}
	}
}

// TestInconclusiveTrialsLeaveTheSuccessRate: an infrastructure failure says
// nothing about the candidate, so like scoring the success rate leaves it
// out, while the status still shows it.
func TestInconclusiveTrialsLeaveTheSuccessRate(t *testing.T) {
	rec := fixture.Record("five-trials-tie-timeout")
	for _, st := range []bool{true, false} {
		if !st {
			rec.Standings = nil // computed from the results
		}
		rec.Results[0].Failed(runner.ErrInfra, "sandbox vanished")
		out := renderString(t, report.FormatTable, rec, report.Options{})
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "alpha") && !strings.Contains(l, "winner") {
				line = l
			}
		}
		if !strings.Contains(line, "100% (4/4)") || !strings.Contains(line, "infra error 1/5") {
			t.Errorf("with standings=%v the alpha row is %q; want 100%% (4/4) and infra error 1/5", st, line)
		}
	}
}

// TestSuiteMatrixFitsOrIsSummarised: the table prints a suite's per-task
// matrix when it fits (at most 40 tasks, no wider than the terminal) or
// when asked, and otherwise names the hardest and most telling tasks.
func TestSuiteMatrixFitsOrIsSummarised(t *testing.T) {
	rec := fixture.Record("suite")
	small := renderString(t, report.FormatTable, rec, report.Options{})
	if !strings.Contains(small, "tasks, hardest first") || strings.Contains(small, "--matrix prints every task") {
		t.Errorf("8 tasks: want the matrix\n%s", small)
	}
	narrow := renderString(t, report.FormatTable, rec, report.Options{TTY: true, Width: 20})
	flat := strings.Join(strings.Fields(narrow), " ") // lines wrap at 20 columns
	if strings.Contains(flat, "tasks, hardest first") ||
		!strings.Contains(flat, "8 tasks; hardest: csv-max-1 (0.33), km-mi-1 (0.67)") ||
		!strings.Contains(flat, "most telling: csv-max-1 (± 0.58)") {
		t.Errorf("a 20-column terminal: want the summary\n%s", narrow)
	}
	asked := renderString(t, report.FormatTable, rec, report.Options{TTY: true, Width: 20, Matrix: true})
	if !strings.Contains(asked, "tasks, hardest first") {
		t.Errorf("--matrix: want the matrix\n%s", asked)
	}
	// Each task is a row: 8 rows below the matrix's header.
	if n := strings.Count(asked, "✓"); n < 8 {
		t.Errorf("matrix has %d ✓", n)
	}
}

// Trials that needed more than one sandbox are counted and named under
// the winner line, in the table, Markdown and HTML; none, no line.
func TestRetriedTrialsAreReported(t *testing.T) {
	rec := fixture.Record("five-trials-tie-timeout")
	for _, f := range []report.Format{report.FormatTable, report.FormatMarkdown, report.FormatHTML} {
		if out := renderString(t, f, rec, report.Options{}); strings.Contains(out, "second sandbox") {
			t.Errorf("%s: a retried line without retried trials", f)
		}
	}
	rec.Results[1].Attempts = 3
	rec.Results[1].AttemptErrors = []record.AttemptError{{Kind: runner.ErrInfra, Message: "create sandbox: 503"}, {Kind: runner.ErrInfra, Message: "x"}}
	rec.Results[3].Attempts = 2
	name := func(i int) string {
		r := rec.Results[i]
		return runner.TrialName(r.CandidateID, r.TaskID, r.Trial, r.Trial > 1)
	}
	want := fmt.Sprintf("2 trials needed a second sandbox: %s (3 attempts), %s (2 attempts)", name(1), name(3))
	for _, f := range []report.Format{report.FormatTable, report.FormatMarkdown, report.FormatHTML} {
		out := renderString(t, f, rec, report.Options{})
		check := want
		if f == report.FormatMarkdown {
			check = "> [!NOTE]\n> " + want
		}
		if !strings.Contains(out, check) {
			t.Errorf("%s: no %q in\n%s", f, check, out)
		}
	}
}

// A trial marked tampered says so in the table's and Markdown's notes and
// on the HTML report's trial, naming the tool (issue 41).
func TestTamperedTrialsAreReported(t *testing.T) {
	rec := fixture.Record("five-trials-tie-timeout")
	for _, f := range []report.Format{report.FormatTable, report.FormatMarkdown, report.FormatHTML} {
		if out := renderString(t, f, rec, report.Options{}); strings.Contains(out, "tampered") {
			t.Errorf("%s: tampered without a tampered trial", f)
		}
	}
	rec.Results[0].Tampered = []string{"/usr/bin/bash"}
	for f, want := range map[report.Format]string{report.FormatTable: "tampered: /usr/bin/bash", report.FormatMarkdown: "tampered: /usr/bin/bash",
		report.FormatHTML: "<dt>tampered</dt><dd>/usr/bin/bash</dd>"} {
		if out := renderString(t, f, rec, report.Options{}); !strings.Contains(out, want) {
			t.Errorf("%s: no %q in\n%s", f, want, out)
		}
	}
}
