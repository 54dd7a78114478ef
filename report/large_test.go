package report_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/report"
	"github.com/forge-run/forge/report/internal/fixture"
)

// A run of 5,000 trials gets an HTML page that summarises it: at most 50
// trials' sections per candidate, the 100 hardest tasks, and sentences
// that say how many trials and tasks it leaves out.
func TestHTMLSummarisesALargeRun(t *testing.T) {
	rec := fixture.Large(fixture.LargeSpec{Candidates: 2, Tasks: 2500, Trials: 1, StdoutBytes: 2000, Excerpts: true})
	page := renderString(t, report.FormatHTML, rec, report.Options{RunDir: "."})
	if n := strings.Count(page, "<details id="); n == 0 || n > 2*50 {
		t.Errorf("%d trial sections, want between 1 and 100", n)
	}
	if n := strings.Count(page, "<tr><td>task-"); n != 100 {
		t.Errorf("the heat map has %d task rows, want the 100 hardest", n)
	}
	if !strings.Contains(page, "and 2400 more tasks (see results.json)") {
		t.Error("the page does not say how many tasks it leaves out")
	}
	for _, id := range []string{"cand-1", "cand-2"} {
		failed, ok := 0, 0
		for _, r := range rec.Results {
			if r.CandidateID != id {
				continue
			}
			if r.Success {
				ok++
			} else {
				failed++
			}
		}
		if failed == 0 || ok == 0 {
			t.Fatalf("%s: the fixture has %d failed and %d successful trials, want both", id, failed, ok)
		}
		want := regexp.MustCompile(fmt.Sprintf(`\d+ of %d failed trials shown; %d successful trials not shown \(see results.json\)`, failed, ok))
		if !want.MatchString(page) {
			t.Errorf("%s: the page does not say which of its trials it shows (want %q)", id, want)
		}
	}
	if !strings.Contains(page, `class="box"`) || strings.Contains(page, `class="dot `) {
		t.Error("the runtime chart of 2,500 trials per candidate should be box plots, not dots")
	}
	if len(page) > 2<<20 {
		t.Errorf("the page is %d bytes, want under 2 MiB", len(page))
	}
	// A heat-map cell links only to a trial the page shows.
	for _, m := range regexp.MustCompile(`<a href="#([^"]+)">`).FindAllStringSubmatch(page, -1) {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("a link to #%s, which the page does not have", m[1])
		}
	}
}

// The Markdown of 5,000 trials lists a few failures of each kind per
// candidate and the hardest tasks, and says how many more there are.
func TestMarkdownSummarisesALargeRun(t *testing.T) {
	rec := fixture.Large(fixture.LargeSpec{Candidates: 2, Tasks: 2500, Trials: 1, StdoutBytes: 200})
	md := renderString(t, report.FormatMarkdown, rec, report.Options{})
	failed := 0
	for _, r := range rec.Results {
		if !r.Success {
			failed++
		}
	}
	listed := strings.Count(md, "\n- **")
	if listed == 0 || listed > 2*15 {
		t.Errorf("%d failures listed, want between 1 and 30", listed)
	}
	if want := fmt.Sprintf("… and %d more failed trials", failed-listed); !strings.Contains(md, want) {
		t.Errorf("the Markdown does not say %q", want)
	}
	if !strings.Contains(md, "… and 2400 more tasks (see results.json)") {
		t.Error("the Markdown does not say how many tasks its matrix leaves out")
	}
	if len(md) > 64<<10 {
		t.Errorf("the Markdown is %d bytes, more than a PR comment holds", len(md))
	}
}

// excerptRecord is one trial of schema 3 whose stdout the record holds
// the last KiB of, with the stored files' paths.
func excerptRecord(stdoutPath, stderrPath, artifactPath string) *record.Record {
	rec := fixture.Record("one-trial-winner")
	r := &rec.Results[2] // gamma: failed, so every section is open
	r.Output = strings.Repeat("x", 1024)
	r.OutputBytes, r.OutputCut, r.OutputPath = 20<<10, true, stdoutPath
	r.StderrBytes, r.StderrPath = int64(len(r.Stderr)), stderrPath
	r.SetArtifact([]byte("partial"), 7)
	r.ArtifactPath = artifactPath
	return rec
}

// A result of schema 3 shows that its stdout is an excerpt, and links the
// whole file (relative to Options.RunDir) in HTML, names it in Markdown
// and JUnit.
func TestExcerptIsNotedAndLinked(t *testing.T) {
	rec := excerptRecord("gamma/task-7/trial-2/stdout.log", "gamma/task-7/trial-2/stderr.log", "gamma/task-7/trial-2/out put#1.md")
	page := renderString(t, report.FormatHTML, rec, report.Options{RunDir: "."})
	for _, want := range []string{
		"last 1.0 KiB of 20 KiB",
		`<a href="gamma/task-7/trial-2/stdout.log">gamma/task-7/trial-2/stdout.log</a>`,
		`<a href="gamma/task-7/trial-2/stderr.log">gamma/task-7/trial-2/stderr.log</a>`,
		`<a href="gamma/task-7/trial-2/out%20put%231.md">`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the HTML lacks %q", want)
		}
	}
	away := renderString(t, report.FormatHTML, rec, report.Options{RunDir: "../runs/run 1"})
	if want := `<a href="../runs/run%201/gamma/task-7/trial-2/stdout.log">`; !strings.Contains(away, want) {
		t.Errorf("with RunDir ../runs/run 1 the HTML lacks %q", want)
	}
	unknown := renderString(t, report.FormatHTML, rec, report.Options{})
	if strings.Contains(unknown, `<a href="gamma/`) || !strings.Contains(unknown, "<code>gamma/task-7/trial-2/stdout.log</code> in the run's directory") {
		t.Error("without RunDir the HTML should name the whole file without linking it")
	}
	md := renderString(t, report.FormatMarkdown, rec, report.Options{})
	if !strings.Contains(md, "`gamma/task-7/trial-2/stderr.log`, `gamma/task-7/trial-2/stdout.log`") {
		t.Errorf("the Markdown does not name the failed trial's logs:\n%s", md)
	}
	if md := renderString(t, report.FormatMarkdown, rec, report.Options{RunDir: "."}); !strings.Contains(md, "[gamma/task-7/trial-2/stdout.log](gamma/task-7/trial-2/stdout.log)") {
		t.Errorf("with RunDir the Markdown does not link the logs:\n%s", md)
	}
	junit := renderString(t, report.FormatJUnit, rec, report.Options{})
	if want := "[forge: stdout: last 1.0 KiB of 20 KiB, whole file gamma/task-7/trial-2/stdout.log]"; !strings.Contains(junit, want) {
		t.Errorf("the JUnit lacks %q", want)
	}
}

// A path that leaves the run's directory, is absolute or reads as a URL
// scheme is neither linked nor named.
func TestUnsafeLogPathsAreNotLinked(t *testing.T) {
	for _, p := range []string{"../../etc/passwd", "gamma/../../secret.log", "/etc/passwd", "javascript:alert(1)", `gamma\..\x.log`, "gamma//x.log"} {
		rec := excerptRecord(p, p, p)
		for _, f := range []report.Format{report.FormatHTML, report.FormatMarkdown, report.FormatJUnit} {
			out := renderString(t, f, rec, report.Options{RunDir: "."})
			if strings.Contains(out, "passwd") || strings.Contains(out, "secret.log") || strings.Contains(out, "javascript") ||
				strings.Contains(out, "x.log") {
				t.Errorf("%s: path %q reached the report", f, p)
			}
		}
	}
}

// A record of schema 2 (whole output, no paths) gets no excerpt notes.
func TestWholeOutputHasNoExcerptNote(t *testing.T) {
	rec := fixture.Record("one-trial-winner")
	for _, f := range []report.Format{report.FormatHTML, report.FormatJUnit, report.FormatMarkdown} {
		out := renderString(t, f, rec, report.Options{RunDir: "."})
		if strings.Contains(out, "B of ") || strings.Contains(out, "[forge:") || strings.Contains(out, "stdout.log") || strings.Contains(out, "stderr.log") {
			t.Errorf("%s of a record without excerpts talks of excerpts or logs", f)
		}
	}
}

// A run of many trials without tasks is summarised too, without talk of
// tasks.
func TestHTMLSummarisesManyTrialsWithoutTasks(t *testing.T) {
	rec := fixture.Record("five-trials-tie-timeout")
	base := rec.Results
	rec.Results = nil
	for i := range 120 {
		for _, r := range base {
			r.Trial += 5 * i
			rec.Results = append(rec.Results, r)
		}
	}
	page := renderString(t, report.FormatHTML, rec, report.Options{})
	if !strings.Contains(page, "1800 trials: this page shows each candidate&#39;s failed trials, at most 10 of each kind and 50 in all; every trial") {
		t.Error("the page does not say it is summarised, or talks of tasks")
	}
	if n := strings.Count(page, "<details id="); n == 0 || n > 3*50 {
		t.Errorf("%d trial sections, want between 1 and 150", n)
	}
}
