package schema_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/schema"
	"github.com/forge-run/forge/scoring"
)

func ptr[T any](v T) *T { return &v }

// sampleRecord is a full record as the run writes it: every optional part
// present, one success and one failure.
func sampleRecord() *record.Record {
	t0 := time.Date(2026, 11, 21, 15, 30, 0, 0, time.UTC)
	ok := record.Trial{Result: runner.Result{
		CandidateID: "alpha", Trial: 1, Backend: "local", Success: true, ExitCode: ptr(0),
		Output: "[Alpha] Found 10 events\n", ArtifactPath: "alpha/discord_post.md",
		Submitted: map[string]any{"items": 10}, RuntimeSeconds: 3.2, Tampered: []string{"/usr/bin/bash"},
		Phases:    runner.Phases{Execute: 3.1, Cleanup: 0.1},
		StartedAt: t0, FinishedAt: t0.Add(3200 * time.Millisecond)}, Score: ptr(0.87),
		Judges: []record.JudgeResult{{Name: "quality", Score: ptr(0.9), Reason: "good"}, {Name: "style", Error: "timed out"}},
	}
	ok.SetArtifact([]byte("# AI Events\n"), 12)
	ok.SetTranscript([]byte("{\"role\": \"user\", \"content\": \"hi\"}\nnot json\n"), 1<<30)
	ok.TranscriptPath = "alpha/transcript.jsonl"
	bad := record.Trial{Result: runner.Result{
		CandidateID: "beta", Trial: 1, SandboxID: "sb-1", Backend: "local", Output: "\xff\xfe",
		SubmitError: "not a JSON object", StartedAt: t0, FinishedAt: t0.Add(time.Second)},
	}
	bad.SetArtifact([]byte{0xff, 0x00}, 2)
	bad.Failed(runner.ErrTimeout, "timed out after 1s")
	return &record.Record{
		SchemaVersion: record.SchemaVersion, RunID: "20261121-153000-ab12", Objective: "Generate weekly AI events",
		Backend: "local", ManifestPath: "forge.yaml", ManifestHash: "sha256:00", StartedAt: t0, FinishedAt: t0.Add(4 * time.Second),
		Results: []record.Trial{ok, bad},
		Standings: []record.Standing{
			{Rank: 1, CandidateID: "alpha", Score: 0.87, ScoreCI95: [2]float64{0.87, 0.87}, SuccessRate: 1,
				SuccessCI95: [2]float64{0.2, 1}, Successes: 1, RuntimeMeanSeconds: 3.2, Trials: 1, ScoredTrials: 1,
				Breakdown: map[string]float64{"quality": 0.9}, JudgeErrors: 1, Notes: []string{"judge style failed"}},
			{Rank: 2, CandidateID: "beta", SuccessCI95: [2]float64{0, 0.8}, Trials: 1, Errors: map[string]int{"timeout": 1}},
		},
		Winner: ptr("alpha"), WinnerLine: "winner: alpha (0.87)",
		Comparison: &record.Comparison{Best: "alpha", Second: "beta", Method: "exact", BestScore: 0.87, Ratio: 0,
			Difference: 0.87, Alpha: 0.05, Clear: true},
		UndeletedSandboxes: []string{"sb-1"},
	}
}

// suiteRecord is a suite's record as the run writes it, scored by scoring:
// two candidates, two tasks, one of them failed by the infrastructure.
func suiteRecord() *record.Record {
	rec := sampleRecord()
	rec.Tasks = []record.TaskInfo{{ID: "q1", Objective: "o", Weight: 1}, {ID: "q2", Objective: "p", Weight: 2}}
	rec.Sample = &record.Sample{N: 2, Of: 9, Seed: 7}
	var results []record.Trial
	for _, task := range []string{"q1", "q2"} {
		for _, r := range sampleRecord().Results {
			r.TaskID = task
			results = append(results, r)
		}
	}
	results[3].Failed(runner.ErrInfra, "sandbox lost")
	out := scoring.ScoreSuite(scoring.Config{}, scoring.Suite{Candidates: []string{"alpha", "beta"},
		Tasks: []scoring.Task{{ID: "q1"}, {ID: "q2", Weight: 2}}, PassAtK: 1}, results)
	rec.Results = results
	out.Apply(rec.Results)
	rec.Standings, rec.Winner, rec.WinnerLine = out.Standings, out.Winner, out.WinnerLine
	rec.Comparison, rec.Incomplete, rec.TaskMatrix, rec.HeadToHead = out.Comparison, out.Incomplete, out.Tasks, out.HeadToHead
	return rec
}

func marshal(t *testing.T, rec *record.Record) []byte {
	t.Helper()
	b, err := record.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestValidRecords(t *testing.T) {
	full := sampleRecord()
	minimal := &record.Record{SchemaVersion: 1, RunID: "r", Results: []record.Trial{}}
	notScored := sampleRecord()
	notScored.Standings, notScored.Winner, notScored.Comparison, notScored.Interrupted = nil, nil, nil, true
	for name, rec := range map[string]*record.Record{"full": full, "minimal": minimal, "interrupted before scoring": notScored,
		"suite": suiteRecord()} {
		t.Run(name, func(t *testing.T) {
			if err := schema.ValidateResults(marshal(t, rec)); err != nil {
				t.Fatalf("a record forge writes does not validate: %v", err)
			}
		})
	}
}

// TestInvalidRecords breaks a valid record one way at a time; each must fail
// and name where.
func TestInvalidRecords(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(m map[string]any)
		where string
	}{
		{"schema_version 5", func(m map[string]any) { m["schema_version"] = 5 }, "/schema_version"},
		{"task weight 0", func(m map[string]any) { m["tasks"] = []any{map[string]any{"id": "q1", "objective": "o", "weight": 0}} }, "/tasks/0/weight"},
		{"bad task id", func(m map[string]any) { result(m, 0)["task_id"] = "q 1" }, "/results/0/task_id"},
		{"results missing before schema 4", func(m map[string]any) { m["schema_version"] = 3; delete(m, "results") }, "results"},
		{"a score without its trial", func(m map[string]any) { m["scores"] = []any{map[string]any{"candidate_id": "a", "score": 1}} }, "/scores/0"},
		{"unknown error kind", func(m map[string]any) { result(m, 1)["error_kind"] = "exploded" }, "/results/1/error_kind"},
		{"success with an error kind", func(m map[string]any) { result(m, 0)["error_kind"] = "timeout" }, "/results/0"},
		{"failure without an error kind", func(m map[string]any) { result(m, 1)["error_kind"] = nil }, "/results/1"},
		{"bad timestamp", func(m map[string]any) { m["started_at"] = "yesterday" }, "/started_at"},
		{"bad candidate id", func(m map[string]any) { result(m, 0)["candidate_id"] = "al pha" }, "/results/0/candidate_id"},
		{"negative runtime", func(m map[string]any) { result(m, 0)["runtime_seconds"] = -1 }, "/results/0/runtime_seconds"},
		{"trial 0", func(m map[string]any) { result(m, 0)["trial"] = 0 }, "/results/0/trial"},
		{"string exit code", func(m map[string]any) { result(m, 0)["exit_code"] = "0" }, "/results/0/exit_code"},
		{"phase missing", func(m map[string]any) { delete(result(m, 0)["phases"].(map[string]any), "execute") }, "/results/0/phases"},
		{"success rate 1.5", func(m map[string]any) { standing(m, 0)["success_rate"] = 1.5 }, "/standings/0/success_rate"},
		{"interval of three", func(m map[string]any) { standing(m, 0)["score_ci95"] = []any{0, 1, 2} }, "/standings/0/score_ci95"},
		{"winner a number", func(m map[string]any) { m["winner"] = 3 }, "/winner"},
		{"p-value 2", func(m map[string]any) { m["comparison"].(map[string]any)["p_value"] = 2 }, "/comparison/p_value"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(marshal(t, sampleRecord()), &m); err != nil {
				t.Fatal(err)
			}
			c.edit(m)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			err = schema.ValidateResults(b)
			if err == nil {
				t.Fatal("validated; want an error")
			}
			if !strings.Contains(err.Error(), c.where) {
				t.Errorf("error does not mention %q:\n%v", c.where, err)
			}
		})
	}
}

// TestValidRecordOnDisk: the two files a run writes, results.json and
// each line of trials.jsonl, validate.
func TestValidRecordOnDisk(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, record.ResultsFile)
	if err := record.Write(path, suiteRecord()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.ValidateResults(b); err != nil || !bytes.Contains(b, []byte(`"scores"`)) || bytes.Contains(b, []byte(`"results"`)) {
		t.Errorf("results.json: %v\n%s", err, b)
	}
	b, err = os.ReadFile(filepath.Join(dir, record.TrialsFile))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range bytes.Lines(b) {
		n++
		if err := schema.ValidateTrial(line); err != nil {
			t.Errorf("trials.jsonl:%d: %v", n, err)
		}
	}
	if n != 4 {
		t.Errorf("trials.jsonl has %d lines, want 4", n)
	}
	var bad map[string]any
	json.Unmarshal(bytes.SplitN(b, []byte("\n"), 2)[0], &bad)
	bad["trial"] = 0
	if line, _ := json.Marshal(bad); schema.ValidateTrial(line) == nil {
		t.Error("a trial 0 validated")
	}
}

func TestNotJSON(t *testing.T) {
	if err := schema.ValidateResults([]byte(`{"run_id": `)); err == nil {
		t.Fatal("truncated JSON validated")
	}
}

func result(m map[string]any, i int) map[string]any {
	return m["results"].([]any)[i].(map[string]any)
}

func standing(m map[string]any, i int) map[string]any {
	return m["standings"].([]any)[i].(map[string]any)
}

// TestSchemaCoversEveryField walks the Go types behind results.json: every
// JSON field they write must be a property of the schema, and every field
// written without omitempty must be required. A field added to record.Record,
// record.Trial, runner.Result or record.Standing fails here until the schema
// says what it is.
func TestSchemaCoversEveryField(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(schema.Results(), &doc); err != nil {
		t.Fatal(err)
	}
	defs := doc["$defs"].(map[string]any)
	resultDef := defs["result"].(map[string]any)
	types := []struct {
		typ reflect.Type
		def map[string]any
	}{
		{reflect.TypeFor[record.Record](), doc},
		{reflect.TypeFor[record.Trial](), resultDef},
		{reflect.TypeFor[runner.Result](), resultDef},
		{reflect.TypeFor[runner.Phases](), resultDef["properties"].(map[string]any)["phases"].(map[string]any)},
		{reflect.TypeFor[record.JudgeResult](), defs["judge"].(map[string]any)},
		{reflect.TypeFor[record.Standing](), defs["standing"].(map[string]any)},
		{reflect.TypeFor[record.Comparison](), defs["comparison"].(map[string]any)},
	}
	for _, tc := range types {
		props, _ := tc.def["properties"].(map[string]any)
		var required []string
		for _, r := range tc.def["required"].([]any) {
			required = append(required, r.(string))
		}
		for f := range tc.typ.Fields() {
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if !f.IsExported() || name == "-" || f.Anonymous {
				continue // an embedded struct's fields are its type's, listed apart
			}
			if name == "" {
				name = f.Name
			}
			if _, ok := props[name]; !ok {
				t.Errorf("%s.%s is written as %q but results.schema.json has no such property", tc.typ, f.Name, name)
				continue
			}
			omitted := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
			if !omitted && !slices.Contains(required, name) {
				t.Errorf("%s.%s (%q) is always written but results.schema.json does not require it", tc.typ, f.Name, name)
			}
			if omitted && slices.Contains(required, name) {
				t.Errorf("%s.%s (%q) may be omitted but results.schema.json requires it", tc.typ, f.Name, name)
			}
		}
	}
}

func TestResultsIsACopy(t *testing.T) {
	a := schema.Results()
	a[0] = 'x'
	if schema.Results()[0] == 'x' {
		t.Fatal("Results returns the embedded bytes themselves; a caller can change the schema")
	}
}
