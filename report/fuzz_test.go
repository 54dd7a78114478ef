package report_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/report/internal/fixture"
)

// FuzzReports puts arbitrary candidate bytes (stdout, stderr, error message,
// artifact, objective) through every format: each must render, stay valid
// UTF-8, and stay well-formed in its own syntax.
// Run longer with: go test ./report -run '^$' -fuzz FuzzReports -fuzztime 30s
func FuzzReports(f *testing.F) {
	f.Add("ok\n", "", "timed out after 10s", []byte("# artifact\n"), "Generate weekly AI events")
	f.Add("\xff\xfe\x00", "\x1b[31mred\x1b[0m", "a | b\n<c> & ]]> `d`", []byte{0x89, 'P', 'N', 'G', 0xff}, "\"quotes\" $(x)\n")
	f.Add(strings.Repeat("é", 300), "\r\n\r\n", "\x00\x07\x1b", []byte(nil), "")
	f.Fuzz(func(t *testing.T, output, stderr, msg string, artifact []byte, objective string) {
		rec := fixture.Record("one-trial-winner")
		rec.Objective = objective
		rec.Results[0].Output, rec.Results[0].Stderr = output, stderr
		rec.Results[0].SetArtifact(artifact, int64(len(artifact)))
		rec.Results[2].ErrorMessage, rec.Results[2].Stderr = msg, stderr
		for _, format := range report.AllFormats() {
			var buf bytes.Buffer
			opts := report.Options{TTY: true, Color: true, Now: fixture.Now, MaxOutputBytes: 512}
			if err := report.Write(format, &buf, rec, opts); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			out := buf.Bytes()
			if !utf8.Valid(out) {
				t.Fatalf("%s: not valid UTF-8", format)
			}
			switch format {
			case report.FormatJSON:
				if !json.Valid(out) {
					t.Fatal("JSON report is not JSON")
				}
			case report.FormatJUnit:
				var v struct{}
				if err := xml.Unmarshal(out, &v); err != nil {
					t.Fatalf("JUnit report is not well-formed XML: %v", err)
				}
			case report.FormatCSV:
				rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
				if err != nil || len(rows) != len(rec.Results)+1 {
					t.Fatalf("CSV report: %d rows, %v", len(rows), err)
				}
			case report.FormatMarkdown:
				cells := -1
				for _, line := range strings.Split(string(out), "\n") {
					if !strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "|-") {
						continue
					}
					n := strings.Count(line, "|") - strings.Count(line, `\|`)
					if cells >= 0 && n != cells {
						t.Fatalf("Markdown row with %d separators, header %d: %q", n, cells, line)
					}
					cells = n
				}
			case report.FormatHTML:
				if bytes.Contains(out, []byte("<script")) {
					t.Fatal("HTML report contains a script")
				}
			}
		}
	})
}
