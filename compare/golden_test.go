package compare_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/internal/testkit/golden"
	"github.com/forge-run/forge/runner"
)

// goldenReports are the comparisons the golden files render.
func goldenReports() map[string]compare.Report {
	shift := func(d float64) []float64 {
		out := make([]float64, len(sleep1))
		for i, x := range sleep1 {
			out[i] = x/20 + d
		}
		return out
	}
	nightlyBase := newRecord("20261120-153000-aa11", day(20), "alpha",
		cand{id: "alpha", scores: shift(0.8), runtime: repeat(3.2, 10)},
		cand{id: "beta", scores: shift(0.75), runtime: repeat(2.0, 10)},
		cand{id: "gamma", scores: shift(0.5), runtime: repeat(0.45, 10)},
		cand{id: "old", scores: shift(0.3), runtime: repeat(1, 10)},
		cand{id: "flaky", scores: []float64{0.6}, runtime: []float64{70}},
	)
	nightlyHead := newRecord("20261121-153000-ab12", day(21), "beta",
		cand{id: "beta", scores: shift(0.9), runtime: repeat(2.5, 10)},
		cand{id: "alpha", scores: shift(0.6), runtime: repeat(3.0, 10)},
		cand{id: "gamma", scores: shift(0.52), runtime: repeat(0.5, 10)},
		cand{id: "fresh", scores: shift(0.4), runtime: repeat(1.5, 10)},
		cand{id: "flaky", scores: []float64{0.2}, runtime: []float64{65}},
		cand{id: "broken", scores: []float64{math.NaN(), math.NaN()},
			failed: map[int]runner.ErrorKind{1: runner.ErrInfra, 2: runner.ErrInfra}},
	)
	nightlyHead.ManifestHash = "sha256:bbbb"
	// broken was there before too, and scored.
	nightlyBase.Results = append(nightlyBase.Results, newRecord("x", day(20), "", cand{id: "broken", scores: []float64{0.1, 0.2}}).Results...)
	nightlyBase.Standings = append(nightlyBase.Standings, newRecord("x", day(20), "", cand{id: "broken", scores: []float64{0.1, 0.2}}).Standings...)
	nightlyBase.Standings[len(nightlyBase.Standings)-1].Rank = len(nightlyBase.Standings)

	same := newRecord("20261122-153000-cc33", day(22), "alpha", cand{id: "alpha", scores: []float64{0.9}})
	same2 := newRecord("20261123-153000-dd44", day(23), "alpha", cand{id: "alpha", scores: []float64{0.9}})
	same2.ManifestHash = ""

	evilID := "ev|l`*_[x](y)\x1b[31m\nred<b>&"
	evilBase := newRecord("run|`one`", day(20), evilID, cand{id: evilID, scores: []float64{0.5, 0.6}})
	evilHead := newRecord("run\x1b]0;title\x07two", day(21), "", cand{id: evilID, scores: []float64{0.5, 0.6}})
	evilHead.Backend = "daytona\nlocal"
	evilHead.Interrupted = true

	empty := newRecord("e1", day(20), "")
	empty2 := newRecord("e2", day(21), "")

	// A suite: alpha fails 6 tasks it used to pass; beta is as it was; one
	// task left the suite and one joined it.
	var tasks []string
	for i := 1; i <= 24; i++ {
		tasks = append(tasks, fmt.Sprintf("t%02d", i))
	}
	suiteBase := suiteRecord("20261120-040000-s1", day(20), tasks, map[string][]string{
		"alpha": {"t21", "t22", "t23", "t24"}, "beta": {"t02", "t03", "t04", "t05", "t06", "t07"}})
	suiteHead := suiteRecord("20261121-040000-s2", day(21), append(tasks[1:], "t25"), map[string][]string{
		"alpha": {"t04", "t06", "t08", "t10", "t12", "t14", "t16", "t18", "t21", "t22", "t23", "t24"},
		"beta":  {"t02", "t03", "t04", "t05", "t07", "t09"}})

	return map[string]compare.Report{
		"suite":   compare.Runs(suiteBase, suiteHead),
		"nightly": compare.Runs(nightlyBase, nightlyHead),
		"same":    compare.Runs(same, same2),
		"hostile": compare.Runs(evilBase, evilHead),
		"empty":   compare.Runs(empty, empty2),
	}
}

type goldenFormat struct {
	suffix string
	write  func(*bytes.Buffer, compare.Report) error
}

var goldenFormats = []goldenFormat{
	{"table.txt", func(b *bytes.Buffer, r compare.Report) error { return compare.WriteTable(b, r, false) }},
	{"table-tty.txt", func(b *bytes.Buffer, r compare.Report) error { return compare.WriteTable(b, r, true) }},
	{"md", func(b *bytes.Buffer, r compare.Report) error { return compare.WriteMarkdown(b, r) }},
	{"json", func(b *bytes.Buffer, r compare.Report) error {
		j, err := json.MarshalIndent(r, "", "  ")
		b.Write(append(j, '\n'))
		return err
	}},
}

// TestGolden renders every comparison in every format and compares it with
// testdata/<name>.<format>; run with -update to accept new output.
func TestGolden(t *testing.T) {
	for name, rep := range goldenReports() {
		for _, f := range goldenFormats {
			t.Run(name+"/"+f.suffix, func(t *testing.T) {
				var buf bytes.Buffer
				if err := f.write(&buf, rep); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, filepath.Join("testdata", name+"."+f.suffix), buf.Bytes())
			})
		}
	}
}

// Whatever a record holds, the text renderings stay valid UTF-8, one line
// per row, with no escape sequences.
func TestRenderingsAreClean(t *testing.T) {
	rep := goldenReports()["hostile"]
	for _, f := range goldenFormats[:3] {
		var buf bytes.Buffer
		if err := f.write(&buf, rep); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if !utf8.ValidString(out) || strings.ContainsAny(out, "\x1b\x07\r") {
			t.Errorf("%s: output has invalid UTF-8 or control characters: %q", f.suffix, out)
		}
		if strings.Contains(out, "\nred") {
			t.Errorf("%s: a newline inside an id broke a line: %q", f.suffix, out)
		}
	}
	var md bytes.Buffer
	if err := compare.WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(md.String(), "\n") {
		if strings.HasPrefix(line, "| ev") && strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") != 10 {
			t.Errorf("an id broke the Markdown table row: %q", line)
		}
	}
	if strings.Contains(md.String(), "<b>") {
		t.Errorf("markup from an id reached the Markdown: %q", md.String())
	}
}
