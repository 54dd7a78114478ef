package forge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// SchemaVersion is results.json's schema_version: 2 since suites (tasks,
// task_id). Version 1 records, which have neither, are read as they are.
const SchemaVersion = 2

// readsSchema reports whether this forge reads a record of version v.
func readsSchema(v int) bool { return v == 1 || v == SchemaVersion }

// ResultsFile is the name of the record every run writes in its directory.
const ResultsFile = "results.json"

// Record is a run's results.json (docs/results.md).
type Record struct {
	SchemaVersion int    `json:"schema_version"`
	RunID         string `json:"run_id"`
	Objective     string `json:"objective"`
	Backend       string `json:"backend"`
	// ManifestPath and ManifestHash identify the manifest the run played, so a
	// resume can refuse a changed manifest.
	ManifestPath string    `json:"manifest_path"`
	ManifestHash string    `json:"manifest_hash"`
	StartedAt    time.Time `json:"started_at"`
	FinishedAt   time.Time `json:"finished_at"`
	// Tasks are the suite's tasks the run played, in manifest order
	// (absent without tasks); Sample says how they were drawn (--sample).
	Tasks  []TaskInfo `json:"tasks,omitempty"`
	Sample *Sample    `json:"sample,omitempty"`
	// Shard is the share of the jobs a shard run played (--shard K/N);
	// MissingShards are the shards a merged run lacks (forge merge
	// --allow-partial). Either way the record gives no verdict (partial).
	Shard         *Shard  `json:"shard,omitempty"`
	MissingShards []Shard `json:"missing_shards,omitempty"`
	// Interrupted is true when the run was cancelled before every job ended.
	Interrupted bool               `json:"interrupted"`
	Results     []runner.Result    `json:"results"`
	Standings   []scoring.Standing `json:"standings"`
	// Winner is null when nobody succeeded, no candidate is clearly best or
	// the standings are incomplete.
	Winner *string `json:"winner"`
	// WinnerLine is the human sentence behind Winner
	// ("winner: beta (0.81 ± 0.04), 1.24× alpha, p = 0.003").
	WinnerLine string `json:"winner_line"`
	// Comparison is the statistical comparison of rank 1 with rank 2.
	Comparison *scoring.Comparison `json:"comparison,omitempty"`
	// Incomplete lists the candidates the run could not judge; while it is
	// not empty there is no winner (see scoring.Outcome).
	Incomplete []scoring.Unjudged `json:"incomplete,omitempty"`
	// TaskMatrix is a suite's per-task matrix (hardest tasks first) and
	// HeadToHead its pairwise task-by-task record; absent without tasks.
	TaskMatrix []scoring.TaskRow    `json:"task_matrix,omitempty"`
	HeadToHead []scoring.HeadToHead `json:"head_to_head,omitempty"`
	// NotRun are the candidates left out because a secret they need was
	// not set (forge run --allow-missing-secrets).
	NotRun []NotRun `json:"not_run,omitempty"`
	// UndeletedSandboxes names sandboxes forge could not delete.
	UndeletedSandboxes []string `json:"undeleted_sandboxes,omitempty"`
}

// TaskInfo is a task as the record keeps it.
type TaskInfo struct {
	ID        string  `json:"id"`
	Objective string  `json:"objective"`
	Weight    float64 `json:"weight"`
}

// TaskIDs lists the ids of the record's tasks.
func (rec *Record) TaskIDs() []string {
	ids := make([]string, len(rec.Tasks))
	for i, t := range rec.Tasks {
		ids[i] = t.ID
	}
	return ids
}

// score scores the record's results with cfg: s names the plan's
// candidates (a candidate without results still gets a standing) and
// tasks.
func (rec *Record) score(cfg scoring.Config, s scoring.Suite) {
	out := scoring.ScoreSuite(cfg, s, rec.Results)
	rec.Results = out.Results
	rec.Standings = out.Standings
	rec.Winner = out.Winner
	rec.WinnerLine = out.WinnerLine
	rec.Comparison = out.Comparison
	rec.Incomplete = out.Incomplete
	rec.TaskMatrix = out.Tasks
	rec.HeadToHead = out.HeadToHead
	rec.partial()
}

// ReadRecord reads a run's results.json. Its errors name the file and say
// what is wrong with it: missing, not JSON, or a schema_version this forge
// does not read.
func ReadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: no such file", path)
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	rec, err := DecodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// DecodeRecord reads the bytes of a results.json.
func DecodeRecord(b []byte) (*Record, error) {
	// Check the version first, so a future schema is reported as such and
	// not as whatever field no longer decodes.
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	var syntax *json.SyntaxError
	switch err := json.Unmarshal(b, &head); {
	case len(bytes.TrimSpace(b)) == 0:
		return nil, errors.New("not a results.json: the file is empty")
	case errors.As(err, &syntax):
		return nil, fmt.Errorf("not a results.json: not JSON (at byte %d: %w)", syntax.Offset, err)
	case err != nil:
		return nil, fmt.Errorf("not a results.json: want a JSON object: %w", err)
	case head.SchemaVersion == nil:
		return nil, errors.New("not a results.json: no schema_version")
	case !readsSchema(*head.SchemaVersion):
		return nil, fmt.Errorf("schema_version %d, this forge reads 1 and %d", *head.SchemaVersion, SchemaVersion)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("not a results.json: %w", err)
	}
	return &rec, nil
}

// WriteRecord writes rec to path atomically.
func WriteRecord(path string, rec *Record) error {
	b, err := MarshalRecord(rec)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, b)
}

// MarshalRecord renders results.json: indented, with a trailing newline.
func MarshalRecord(rec *Record) ([]byte, error) {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode results: %w", err)
	}
	return append(b, '\n'), nil
}
