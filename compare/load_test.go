package compare_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/forge-run/forge/compare"
	"github.com/forge-run/forge/record"
)

func TestResolve(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "artifacts")
	r1 := writeRun(t, out, newRecord("r1", day(20), "a", cand{id: "a", scores: []float64{0.5}}))
	if err := os.MkdirAll(filepath.Join(out, "started"), 0o755); err != nil {
		t.Fatal(err)
	}
	plainDir := filepath.Join(root, "plain")
	if err := os.MkdirAll(plainDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A directory named like a run id in the working directory: the run id
	// under the output root wins.
	t.Chdir(root)
	if err := os.MkdirAll("r1", 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		ref, want, err string
	}{
		{ref: "r1", want: r1},
		{ref: filepath.Join(out, "r1"), want: r1},
		{ref: r1, want: r1},
		{ref: "artifacts/r1/results.json", want: "artifacts/r1/results.json"},
		{ref: "r9", err: "run r9: no such run in " + out + ", and no file or directory r9"},
		{ref: "no/such/path", err: "run no/such/path: no such file or directory"},
		{ref: "started", err: "run started: " + filepath.Join(out, "started") + " has no results.json"},
		{ref: plainDir, err: "run " + plainDir + ": directory has no results.json"},
		{ref: "", err: "empty run reference"},
	} {
		got, err := compare.Resolve(tc.ref, out)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Resolve(%q) = %q, %v; want error containing %q", tc.ref, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.ref, got, err, tc.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := writeRun(t, dir, newRecord("r1", day(20), "a", cand{id: "a", scores: []float64{0.5, 0.7}}))
	rec, err := record.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	if rec.RunID != "r1" || len(rec.Results) != 2 || *rec.Results[1].Score != 0.7 || *rec.Winner != "a" {
		t.Errorf("Load = %+v, want the record written", rec)
	}

	for _, tc := range []struct{ name, body, err string }{
		{"empty", "  \n", "not a results.json: the file is empty"},
		{"not-json", "# forge results\n", "not a results.json: not JSON (at byte 1"},
		{"truncated", `{"schema_version": 1, "results": [`, "not a results.json: not JSON"},
		{"array", `[1, 2]`, "not a results.json: want a JSON object"},
		{"no-version", `{"run_id": "x"}`, "not a results.json: no schema_version"},
		{"future", `{"schema_version": 5, "results": "a new shape"}`, "schema_version 5, this forge reads 1 to 4"},
		{"bad-field", `{"schema_version": 1, "results": "nope"}`, "not a results.json: json: cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".json")
			if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := record.Read(p)
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), p+": ") {
				t.Errorf("Load = %v; want an error naming %s and containing %q", err, p, tc.err)
			}
		})
	}

	missing := filepath.Join(dir, "gone.json")
	if _, err := record.Read(missing); err == nil || err.Error() != missing+": no such file" {
		t.Errorf("Load(missing) = %v, want %q", err, missing+": no such file")
	}
}

func TestOpen(t *testing.T) {
	out := t.TempDir()
	writeRun(t, out, newRecord("r1", day(20), "a", cand{id: "a", scores: []float64{0.5}}))
	rec, path, err := compare.Open("r1", out)
	if err != nil || rec.RunID != "r1" || path != filepath.Join(out, "r1", "results.json") {
		t.Errorf("Open(r1) = %v, %q, %v", rec, path, err)
	}
	if _, _, err := compare.Open("r2", out); err == nil {
		t.Error("Open(r2) of a missing run succeeded")
	}
}

// TestOlderVersions: records of versions 1 (before suites), 2 (whole
// outputs, no paths) and 3 (the results inside results.json), written by
// older forges, are read and compared with a version 4 one.
func TestOlderVersions(t *testing.T) {
	dir := t.TempDir()
	v1 := `{"schema_version": 1, "run_id": "old", "objective": "o", "backend": "local", "manifest_path": "forge.yaml",
"manifest_hash": "sha256:aa", "started_at": "2026-11-01T10:00:00Z", "finished_at": "2026-11-01T10:00:04Z",
"interrupted": false, "winner": "a", "winner_line": "winner: a",
"results": [{"candidate_id": "a", "trial": 1, "backend": "local", "success": true, "score": 0.5, "runtime_seconds": 1},
            {"candidate_id": "a", "trial": 2, "backend": "local", "success": true, "score": 0.6, "runtime_seconds": 1}],
"standings": [{"rank": 1, "candidate_id": "a", "score": 0.55, "trials": 2, "scored_trials": 2, "successes": 2, "success_rate": 1}]}`
	v2 := `{"schema_version": 2, "run_id": "mid", "objective": "o", "backend": "local", "manifest_path": "forge.yaml",
"manifest_hash": "sha256:aa", "started_at": "2026-11-02T10:00:00Z", "finished_at": "2026-11-02T10:00:04Z",
"interrupted": false, "winner": "a", "winner_line": "winner: a",
"results": [{"candidate_id": "a", "trial": 1, "backend": "local", "success": true, "score": 0.7, "runtime_seconds": 1,
             "output": "` + strings.Repeat("x", 5000) + `", "artifact_content": "# whole", "artifact_path": "a/trial-1/out.md"},
            {"candidate_id": "a", "trial": 2, "backend": "local", "success": true, "score": 0.8, "runtime_seconds": 1}],
"standings": [{"rank": 1, "candidate_id": "a", "score": 0.75, "trials": 2, "scored_trials": 2, "successes": 2, "success_rate": 1}]}`
	head := newRecord("new", day(21), "a", cand{id: "a", scores: []float64{0.9, 0.95}})
	if head.SchemaVersion != 4 {
		t.Fatalf("a new record is version %d", head.SchemaVersion)
	}
	v3 := strings.Replace(v1, `"schema_version": 1`, `"schema_version": 3`, 1)
	for v, body := range map[int]string{1: v1, 2: v2, 3: v3} {
		p := filepath.Join(dir, fmt.Sprintf("v%d.json", v))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		old, err := record.Read(p)
		if err != nil || old.SchemaVersion != v || len(old.Results) != 2 {
			t.Fatalf("v%d: %+v, %v", v, old, err)
		}
		if v == 2 && len(old.Results[0].Output) != 5000 {
			t.Errorf("v2: the whole output was not read (%d bytes)", len(old.Results[0].Output))
		}
		rep := compare.Runs(old, head)
		if len(rep.Candidates) != 1 || rep.Candidates[0].Test != compare.TestWelch || rep.Candidates[0].ScoreDelta == nil {
			t.Errorf("v%d against v4: %+v", v, rep.Candidates)
		}
	}
}
