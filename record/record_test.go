package record

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/forge-run/forge/runner"
)

// TestTrialsRejectAGarbledLine: only a last line can be cut short; any
// other line that is not a result is reported with its number.
func TestTrialsRejectAGarbledLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), TrialsFile)
	if err := os.WriteFile(path, []byte("{\"candidate_id\":\"a\",\"trial\":1}\nnot json\n{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTrials(path); err == nil || !strings.Contains(err.Error(), TrialsFile+":2:") {
		t.Errorf("err = %v, want one naming line 2", err)
	}
}

// TestEncodeRecordRoundTrips: the record as one document (the JSON
// report), one result per line, decodes back to the record; without
// results it is still a record.
func TestEncodeRecordRoundTrips(t *testing.T) {
	one := 0.5
	awkward := `a, "b"], {c}: \` + "\n\\\"" // what ends an element, escaped
	rec := &Record{SchemaVersion: SchemaVersion, RunID: "x", Objective: `say "results": null` + "\n", Trials: 1,
		Tasks:      []TaskInfo{{ID: "t1", Objective: awkward, Weight: 1}, {ID: "t2", Objective: "[", Weight: 2}},
		Results:    []Trial{{Result: runner.Result{CandidateID: "a", TaskID: "t1", Trial: 1, Success: true, Output: "hi\n"}, Score: &one}, {Result: runner.Result{CandidateID: "b", TaskID: awkward, Trial: 1}}},
		Standings:  []Standing{{CandidateID: "a", Rank: 1}},
		TaskMatrix: []TaskRow{{TaskID: awkward, Cells: []TaskCell{{CandidateID: "a", Trials: 1}}}, {TaskID: "t2"}}}
	b, err := Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte(`"candidate_id"`)); n != 4 || !bytes.Contains(b, []byte("\n    {\"candidate_id\":\"b\"")) {
		t.Errorf("not one result per line:\n%s", b)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rec) {
		t.Errorf("round trip:\n%+v\n%+v", back, rec)
	}
	rec.Results = nil
	if b, err = Marshal(rec); err != nil || !json.Valid(b) || !bytes.Contains(b, []byte(`"results": []`)) {
		t.Errorf("empty record %v:\n%s", err, b)
	}
}

// TestReorder: whatever the permutation, each element ends where order
// says, in place.
func TestReorder(t *testing.T) {
	for n := range 40 {
		order := rand.Perm(n)
		s := make([]int, n)
		for i := range s {
			s[i] = i * 10
		}
		Reorder(s, order)
		for i, from := range order {
			if s[i] != from*10 {
				t.Fatalf("n %d, order %v: got %v", n, order, s)
			}
		}
	}
}
