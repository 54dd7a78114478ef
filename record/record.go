package record

// A run's record is two files (docs/results.md): trials.jsonl, one result
// a line as each trial ends, and results.json, the run and what is derived
// from its trials.

import (
	"fmt"
	"time"

	"github.com/forge-run/forge/internal/text"
)

// SchemaVersion is results.json's schema_version: 4 since trials.jsonl,
// 3 since excerpts, 2 since suites. Records of 1 to 3 are read as they are.
const SchemaVersion = 4

// ResultsFile is the run's summary; TrialsFile its trials, beside it.
const (
	ResultsFile = "results.json"
	TrialsFile  = "trials.jsonl"
)

// JournalFile is where a run of schema 3 kept its trials until it ended;
// an unfinished run of that version is read with it.
const JournalFile = "journal.jsonl"

// Record is a run: its summary (results.json) and its trials.
type Record struct {
	SchemaVersion int    `json:"schema_version"`
	RunID         string `json:"run_id"`
	Objective     string `json:"objective"`
	Backend       string `json:"backend"`
	// ManifestPath and ManifestHash identify the manifest the run played.
	ManifestPath string `json:"manifest_path"`
	ManifestHash string `json:"manifest_hash"`
	// Files are the manifest and every file it names, by path, each with
	// its digest: what forge compare names when the hash differs.
	Files      map[string]string `json:"files,omitempty"`
	StartedAt  time.Time         `json:"started_at"`
	FinishedAt time.Time         `json:"finished_at"`
	// Candidates are the candidates the run plays, in manifest order.
	Candidates []string `json:"candidates,omitempty"`
	// Tasks are the suite's tasks the run played, in manifest order
	// (absent without tasks); Sample says how they were drawn (--sample).
	Tasks  []TaskInfo `json:"tasks,omitempty"`
	Sample *Sample    `json:"sample,omitempty"`
	// Trials is the trials per candidate (since schema 3).
	Trials int `json:"trials,omitempty"`
	// Shard is the share of the jobs a shard run played; MissingShards are
	// the shards a merged run lacks. Either way there is no verdict.
	Shard         *Shard  `json:"shard,omitempty"`
	MissingShards []Shard `json:"missing_shards,omitempty"`
	// Environments are how each environment was made ready, in order.
	Environments []EnvironmentBuilt `json:"environments,omitempty"`
	// Interrupted is true when the run was cancelled before every job ended.
	Interrupted bool `json:"interrupted"`
	// BudgetReached says the run stopped starting jobs at its budget
	// (--max-cost, budget:); Interrupted is then true too.
	BudgetReached *BudgetStop `json:"budget_reached,omitempty"`
	// Results are the trials, in plan order once the run ended (in
	// trials.jsonl since schema 4).
	Results   []Trial    `json:"results,omitempty"`
	Standings []Standing `json:"standings"`
	// Winner is null unless one candidate is clearly best.
	Winner *string `json:"winner"`
	// WinnerLine is the human sentence behind Winner
	// ("winner: beta (0.81 ± 0.04), 1.24× alpha, p = 0.003").
	WinnerLine string `json:"winner_line"`
	// Comparison is the statistical comparison of rank 1 with rank 2.
	Comparison *Comparison `json:"comparison,omitempty"`
	// Incomplete lists the candidates the run could not judge (no winner).
	Incomplete []Unjudged `json:"incomplete,omitempty"`
	// TaskMatrix is a suite's per-task matrix (hardest tasks first) and
	// HeadToHead its pairwise task-by-task record; absent without tasks.
	TaskMatrix []TaskRow    `json:"task_matrix,omitempty"`
	HeadToHead []HeadToHead `json:"head_to_head,omitempty"`
	// NotRun are the candidates left out for a missing secret.
	NotRun []NotRun `json:"not_run,omitempty"`
	// UndeletedSandboxes names sandboxes forge could not delete.
	UndeletedSandboxes []string `json:"undeleted_sandboxes,omitempty"`
	// Scores are the trials' scores in results.json (trials.jsonl is
	// written before scoring); Read moves them into the results.
	Scores []TrialScore `json:"scores,omitempty"`
}

// TrialScore is a scored trial's score in results.json.
type TrialScore struct {
	CandidateID string  `json:"candidate_id"`
	TaskID      string  `json:"task_id,omitempty"`
	Trial       int     `json:"trial"`
	Score       float64 `json:"score"`
}

// TaskInfo is a task as the record keeps it.
type TaskInfo struct {
	ID        string  `json:"id"`
	Objective string  `json:"objective"`
	Weight    float64 `json:"weight"`
	// Difficulty and Category are the task's fields of those names, when
	// text (a Harbor task's metadata): what the viewer filters on.
	Difficulty string `json:"difficulty,omitempty"`
	Category   string `json:"category,omitempty"`
}

// TaskIDs lists the ids of the record's tasks.
func (rec *Record) TaskIDs() []string {
	ids := make([]string, len(rec.Tasks))
	for i, t := range rec.Tasks {
		ids[i] = t.ID
	}
	return ids
}

// TrialsPerCandidate is Trials, or before schema 3 the highest trial of
// the results.
func (rec *Record) TrialsPerCandidate() int {
	if rec.Trials > 0 {
		return rec.Trials
	}
	n := 0
	for _, res := range rec.Results {
		n = max(n, res.Trial)
	}
	return n
}

// Finished reports whether the run ended (results.json was written whole),
// even if interrupted; a run still under way, or killed, has not.
func (rec *Record) Finished() bool { return !rec.FinishedAt.IsZero() }

// Sample says how a run's tasks were drawn from the manifest's.
type Sample struct {
	N    int   `json:"n"`
	Of   int   `json:"of"`
	Seed int64 `json:"seed"`
}

// Shard is share Index of Count of a run's jobs (--shard K/N). In a record
// Jobs and Of say how many jobs the shard played of the whole run's.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
	Jobs  int `json:"jobs,omitempty"`
	Of    int `json:"of,omitempty"`
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Same reports whether s and t name the same share of a run.
func (s *Shard) Same(t *Shard) bool {
	if s == nil || t == nil {
		return s == t
	}
	return s.Index == t.Index && s.Count == t.Count
}

// EnvironmentBuilt is how the run made one environment ready (built, or
// reused), where, and how long it took: the run's time, not a job's.
type EnvironmentBuilt struct {
	Name string `json:"name"`
	Hash string `json:"hash"`
	// Where is the local directory, or the Daytona snapshot's name.
	Where        string  `json:"where"`
	Reused       bool    `json:"reused"`
	BuildSeconds float64 `json:"build_seconds"`
	// Log is the build's log in the run directory (relative to it), when
	// anything was built.
	Log string `json:"log,omitempty"`
	// Error is why the build failed.
	Error string `json:"error,omitempty"`
	// Source is the file its image comes from (a Dockerfile), relative
	// to the manifest's directory: what to fix when its build failed.
	Source string `json:"source,omitempty"`
}

// BudgetStop says the run stopped starting jobs because of its budget:
// the limit, and what its finished jobs had spent when it stopped.
type BudgetStop struct {
	LimitUSD float64 `json:"limit_usd"`
	SpentUSD float64 `json:"spent_usd"`
	// NotStarted counts the jobs it did not start.
	NotStarted int `json:"not_started"`
}

// String is the line that says so.
func (b *BudgetStop) String() string {
	return fmt.Sprintf("budget reached: %s spent of %s; %d %s not started", text.USD(b.SpentUSD), text.USD(b.LimitUSD),
		b.NotStarted, text.Plural(b.NotStarted, "job", "jobs"))
}

// NotRun is a candidate a run left out: a secret it needs is not set.
type NotRun struct {
	CandidateID string `json:"candidate_id"`
	Reason      string `json:"reason"`
}
