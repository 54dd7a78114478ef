package forge

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// The head of a record is the record without its results, whether forge
// wrote it one result a line (EncodeRecord) or an older forge indented it
// whole (json.MarshalIndent), whatever the results hold.
func TestReadRecordHeadSkipsTheResults(t *testing.T) {
	winner := "alpha"
	rec := &Record{SchemaVersion: SchemaVersion, RunID: "r1", Objective: "obj", Backend: "local", Trials: 2,
		StartedAt: time.Date(2026, 11, 21, 15, 30, 0, 0, time.UTC), FinishedAt: time.Date(2026, 11, 21, 15, 31, 0, 0, time.UTC),
		Tasks:  []TaskInfo{{ID: "t1", Objective: "obj", Weight: 1}, {ID: "t2", Objective: "obj", Weight: 1}},
		Winner: &winner, WinnerLine: "winner: alpha"}
	for i := range 3 {
		r := runner.Result{CandidateID: "alpha", TaskID: "t1", Trial: i + 1, Backend: "local", Success: true,
			Output: "]\n  ]\n  ],\n", ArtifactContent: "  ]", Submitted: map[string]any{"list": []any{1, []any{2}}}}
		rec.Results = append(rec.Results, r)
	}
	rec.score(scoring.Config{}, scoring.Suite{})
	rec.TaskMatrix = []scoring.TaskRow{{TaskID: "t1", Weight: 1, Mean: 1}, {TaskID: "t2", Weight: 1, Mean: 0.5}}
	dir := t.TempDir()
	indented, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	empty := *rec
	empty.Results = nil
	for name, write := range map[string]func(string) error{
		"forge's":    func(p string) error { return WriteRecord(p, rec) },
		"indented":   func(p string) error { return os.WriteFile(p, indented, 0o644) },
		"no results": func(p string) error { return WriteRecord(p, &empty) },
	} {
		path := filepath.Join(dir, name+".json")
		if err := write(path); err != nil {
			t.Fatal(err)
		}
		got, err := ReadRecordHead(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		whole, err := ReadRecord(path)
		if err != nil {
			t.Fatal(err)
		}
		whole.Results = nil
		if !reflect.DeepEqual(got, whole) {
			t.Errorf("%s: head\n%+v\nwant\n%+v", name, got, whole)
		}
		if got.RunID != "r1" || got.WinnerLine == "" || len(got.Tasks) != 2 || got.Results != nil {
			t.Errorf("%s: head %+v", name, got)
		}
		// The summary: the head without the tasks and the task matrix
		// either, and how many tasks there are (an indented record is read
		// as the head is).
		sum, tasks, err := ReadRecordSummary(path)
		if err != nil {
			t.Fatalf("%s: summary: %v", name, err)
		}
		if tasks != 2 {
			t.Errorf("%s: summary counts %d tasks, want 2", name, tasks)
		}
		if sum.Tasks != nil || sum.TaskMatrix != nil {
			t.Errorf("%s: the summary holds the tasks or the matrix", name)
		}
		sum.Tasks, sum.TaskMatrix, whole.Tasks, whole.TaskMatrix = nil, nil, nil, nil
		if !reflect.DeepEqual(sum, whole) {
			t.Errorf("%s: summary\n%+v\nwant\n%+v", name, sum, whole)
		}
	}
	if _, err := ReadRecordHead(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file read")
	}
}

// ScanRecord hands each result's line with where it is in the file; a
// record indented whole comes back with its results instead.
func TestScanRecordGivesEachResultsLine(t *testing.T) {
	rec := &Record{SchemaVersion: SchemaVersion, RunID: "r1", Backend: "local", Trials: 1}
	for _, id := range []string{"a", "b", "c"} {
		rec.Results = append(rec.Results, runner.Result{CandidateID: id, Trial: 1, Output: "x\n  ]\n"})
	}
	path := filepath.Join(t.TempDir(), "results.json")
	if err := WriteRecord(path, rec); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	got, err := ScanRecord(f, func(off int64, line []byte) error {
		if at := b[off : off+int64(len(line))]; string(at) != string(line) {
			t.Errorf("line at %d is %q in the file, handed %q", off, at, line)
		}
		var r runner.Result
		if err := json.Unmarshal(line, &r); err != nil {
			t.Errorf("line %q: %v", line, err)
		}
		ids = append(ids, r.CandidateID)
		return nil
	})
	if err != nil || got.RunID != "r1" || got.Results != nil || strings.Join(ids, ",") != "a,b,c" {
		t.Fatalf("ScanRecord: %v, run %q, results %v, lines of %v", err, got.RunID, got.Results, ids)
	}

	indented, _ := json.MarshalIndent(rec, "", "  ")
	called := false
	got, err = ScanRecord(bytes.NewReader(indented), func(int64, []byte) error { called = true; return nil })
	if err != nil || called || len(got.Results) != 3 || got.Results[2].CandidateID != "c" {
		t.Fatalf("indented: %v, called %v, results %+v", err, called, got.Results)
	}
}
