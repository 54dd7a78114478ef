package forge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
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
	}
	if _, err := ReadRecordHead(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file read")
	}
}
