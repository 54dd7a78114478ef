package forge

import (
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
}
