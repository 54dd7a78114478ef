package compare_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/internal/testkit/golden"
	"github.com/forge-run/forge/runner"
)

// historyRoot writes an output root with three runs (written out of date
// order), an unreadable one, a directory without results.json, a hidden
// directory and a stray file.
func historyRoot(t *testing.T) string {
	t.Helper()
	out := t.TempDir()
	writeRun(t, out, newRecord("20261121-153000-ab12", day(21), "alpha",
		cand{id: "alpha", scores: []float64{0.91}},
		cand{id: "beta", scores: []float64{0.85}},
		cand{id: "gamma", scores: []float64{0.53}},
	))
	old := newRecord("20261119-090000-0001", day(19), "",
		cand{id: "alpha", scores: []float64{0.5, 0.52, 0.51}},
		cand{id: "beta", scores: []float64{math.NaN(), math.NaN(), math.NaN()},
			failed: map[int]runner.ErrorKind{1: runner.ErrInfra, 2: runner.ErrInfra, 3: runner.ErrInfra}},
	)
	old.Backend = "daytona"
	writeRun(t, out, old)
	mid := newRecord("20261120-153000-aa11", day(20), "beta", cand{id: "beta", scores: []float64{0.8}}, cand{id: "alpha", scores: []float64{0.7}})
	mid.Interrupted = true
	writeRun(t, out, mid)

	for name, body := range map[string]string{
		"broken/results.json":  "{not json",
		"future/results.json":  `{"schema_version": 9}`,
		".hidden/results.json": "{}",
		"notes.txt":            "not a run",
	} {
		p := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(out, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHistory(t *testing.T) {
	out := historyRoot(t)
	es, err := compare.History(out, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range es {
		ids = append(ids, e.RunID)
	}
	want := []string{"20261121-153000-ab12", "20261120-153000-aa11", "20261119-090000-0001", "broken", "empty", "future"}
	if !reflect.DeepEqual(ids, want) {
		t.Fatalf("History ids = %v, want %v", ids, want)
	}
	newest := es[0]
	if newest.Backend != "local" || newest.Trials != 1 || *newest.Winner != "alpha" || newest.Interrupted || newest.Skipped != "" {
		t.Errorf("newest = %+v", newest)
	}
	if len(newest.Scores) != 3 || newest.Scores[2].CandidateID != "gamma" || *newest.Scores[2].Score != 0.53 {
		t.Errorf("newest scores = %+v, want alpha beta gamma in standings order", newest.Scores)
	}
	oldest := es[2]
	if oldest.Winner != nil || oldest.Trials != 3 || oldest.Scores[1].Score != nil {
		t.Errorf("oldest = %+v, want no winner, 3 trials, beta unscored", oldest)
	}
	if !es[1].Interrupted {
		t.Errorf("middle run = %+v, want interrupted", es[1])
	}
	for i, why := range []string{"not JSON", "no results.json", "schema_version 9"} {
		if e := es[3+i]; !strings.Contains(e.Skipped, why) {
			t.Errorf("%s: skipped = %q, want it to say %q", e.RunID, e.Skipped, why)
		}
	}

	es, err = compare.History(out, 2)
	if err != nil || len(es) != 2 || es[1].RunID != "20261120-153000-aa11" {
		t.Errorf("History(last 2) = %+v, %v; want the two newest runs", es, err)
	}
}

func TestHistoryMissingRoot(t *testing.T) {
	_, err := compare.History(filepath.Join(t.TempDir(), "nope"), 0)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("History(missing) = %v, want an error saying the root does not exist", err)
	}
}

func TestHistoryEmptyRoot(t *testing.T) {
	es, err := compare.History(t.TempDir(), 0)
	if err != nil || len(es) != 0 {
		t.Errorf("History(empty) = %v, %v; want no entries and no error", es, err)
	}
}

// The line format of the brief, exactly, for a lone run.
func TestWriteHistoryLine(t *testing.T) {
	out := t.TempDir()
	writeRun(t, out, newRecord("20261121-153000-ab12", day(21), "alpha",
		cand{id: "alpha", scores: []float64{0.91}},
		cand{id: "beta", scores: []float64{0.85}},
		cand{id: "gamma", scores: []float64{0.53}},
	))
	es, err := compare.History(out, 0)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := compare.WriteHistory(&buf, es); err != nil {
		t.Fatal(err)
	}
	want := "2026-11-21 15:30  20261121-153000-ab12  local  winner alpha 0.91  beta 0.85 gamma 0.53\n"
	if buf.String() != want {
		t.Errorf("WriteHistory =\n%q\nwant\n%q", buf.String(), want)
	}
}

func TestWriteHistoryGolden(t *testing.T) {
	es, err := compare.History(historyRoot(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range es {
		es[i].Dir = filepath.Join("artifacts", filepath.Base(es[i].Dir)) // not the temporary directory
	}
	var buf bytes.Buffer
	if err := compare.WriteHistory(&buf, es); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "history.txt"), buf.Bytes())
}

// TestHistoryNamesASuitesTasks: a suite's line says how many tasks it
// played, and its trials are per task.
func TestHistoryNamesASuitesTasks(t *testing.T) {
	out := t.TempDir()
	tasks := []string{"t1", "t2", "t3"}
	writeRun(t, out, suiteRecord("s1", day(22), tasks, map[string][]string{"a": nil, "b": {"t2"}}))
	es, err := compare.History(out, 0)
	if err != nil || len(es) != 1 || es[0].Tasks != 3 || es[0].Trials != 1 {
		t.Fatalf("History = %+v, %v", es, err)
	}
	var buf bytes.Buffer
	if err := compare.WriteHistory(&buf, es); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "  local 3 tasks  ") {
		t.Errorf("history line %q", buf.String())
	}
}
