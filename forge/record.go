package forge

// A run's record is two files (docs/results.md): trials.jsonl, one result
// a line as each trial ends, and results.json, the run and what is derived
// from its trials.

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// SchemaVersion is results.json's schema_version: 4 since trials.jsonl,
// 3 since excerpts, 2 since suites. Records of 1 to 3 are read as they are.
const SchemaVersion = 4

// ResultsFile is the run's summary; TrialsFile its trials, beside it.
const (
	ResultsFile = "results.json"
	TrialsFile  = "trials.jsonl"
)

// journalFile is where a run of schema 3 kept its trials until it ended;
// an unfinished run of that version is read with it.
const journalFile = "journal.jsonl"

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
	Results   []runner.Result    `json:"results,omitempty"`
	Standings []scoring.Standing `json:"standings"`
	// Winner is null unless one candidate is clearly best.
	Winner *string `json:"winner"`
	// WinnerLine is the human sentence behind Winner
	// ("winner: beta (0.81 ± 0.04), 1.24× alpha, p = 0.003").
	WinnerLine string `json:"winner_line"`
	// Comparison is the statistical comparison of rank 1 with rank 2.
	Comparison *scoring.Comparison `json:"comparison,omitempty"`
	// Incomplete lists the candidates the run could not judge (no winner).
	Incomplete []scoring.Unjudged `json:"incomplete,omitempty"`
	// TaskMatrix is a suite's per-task matrix (hardest tasks first) and
	// HeadToHead its pairwise task-by-task record; absent without tasks.
	TaskMatrix []scoring.TaskRow    `json:"task_matrix,omitempty"`
	HeadToHead []scoring.HeadToHead `json:"head_to_head,omitempty"`
	// NotRun are the candidates left out for a missing secret.
	NotRun []NotRun `json:"not_run,omitempty"`
	// UndeletedSandboxes names sandboxes forge could not delete.
	UndeletedSandboxes []string `json:"undeleted_sandboxes,omitempty"`
	// Scores are the trials' scores in results.json (trials.jsonl is
	// written before scoring); ReadRecord moves them into the results.
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

// score scores the record's results with cfg over suite s.
func (rec *Record) score(cfg scoring.Config, s scoring.Suite) {
	out := scoring.ScoreSuite(cfg, s, rec.Results)
	out.Apply(rec.Results)
	rec.Standings = out.Standings
	rec.Winner = out.Winner
	rec.WinnerLine = out.WinnerLine
	rec.Comparison = out.Comparison
	rec.Incomplete = out.Incomplete
	rec.TaskMatrix = out.Tasks
	rec.HeadToHead = out.HeadToHead
	rec.partial()
}

// trials is Trials, or before schema 3 the highest trial of the results.
func (rec *Record) trials() int {
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

// ReadRecord reads the run whose results.json is path, with its trials
// (TrialsPath, or inside an older results.json). Its errors name the file
// and say what is wrong: missing, not JSON, or an unknown schema_version.
func ReadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, recordFileError(path, err)
	}
	rec, err := DecodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rec.Results != nil && rec.Finished() {
		return rec, nil
	}
	trials := rec.TrialsPath(path)
	results, err := ReadTrials(trials)
	switch {
	case errors.Is(err, fs.ErrNotExist) && rec.Finished():
		return nil, fmt.Errorf("%s: its trials, %s, are missing", path, trials)
	case errors.Is(err, fs.ErrNotExist):
		return rec, nil // no trial has ended yet
	case err != nil:
		return nil, err
	}
	rec.adopt(results)
	return rec, nil
}

// TrialsPath is where the trials of the record at path are: trials.jsonl
// beside it, or an unfinished schema 3 run's journal.
func (rec *Record) TrialsPath(path string) string {
	if rec.SchemaVersion < 4 {
		return filepath.Join(filepath.Dir(path), journalFile)
	}
	return filepath.Join(filepath.Dir(path), TrialsFile)
}

// adopt makes results, read from the run's trials, the record's
// (Arrange), put in order where they are.
func (rec *Record) adopt(results []runner.Result) {
	order, n := rec.Arrange(results)
	Reorder(results, order)
	rec.Results = results[:n]
}

// Reorder puts s in order (s[i] becomes what s[order[i]] was) in place,
// cycle by cycle: 100,000 results are not held twice. order is a
// permutation of s's indexes.
func Reorder[T any](s []T, order []int) {
	done := make([]bool, len(s))
	for start := range order {
		if done[start] {
			continue
		}
		held := s[start]
		for at := start; ; {
			done[at] = true
			from := order[at]
			if from == start {
				s[at] = held
				break
			}
			s[at], at = s[from], from
		}
	}
}

// takeScores gives results the scores results.json keeps for them
// (Scores), and leaves Scores empty.
func (rec *Record) takeScores(results []runner.Result) {
	if len(rec.Scores) == 0 {
		return
	}
	scores := make(map[trialKey]float64, len(rec.Scores))
	for _, s := range rec.Scores {
		scores[trialKey{s.CandidateID, s.TaskID, s.Trial}] = s.Score
	}
	for i := range results {
		r := &results[i]
		if v, ok := scores[trialKey{r.CandidateID, r.TaskID, r.Trial}]; ok {
			r.Score = &v
		}
	}
	rec.Scores = nil
}

// trialKey names a trial.
type trialKey struct {
	candidate, task string
	trial           int
}

// Arrange gives results, read from the run's trials, their scores
// (takeScores) and orders them (Reorder): first the n the record holds, a
// trial's last line only (--resume played it again), in plan order once
// the run ended, else in the file's; then the lines it drops.
func (rec *Record) Arrange(results []runner.Result) (order []int, n int) {
	rec.takeScores(results)
	at := make(map[trialKey]int, len(results))
	order = make([]int, 0, len(results))
	var dropped []int
	for i, r := range results {
		k := trialKey{r.CandidateID, r.TaskID, r.Trial}
		if j, ok := at[k]; ok {
			dropped = append(dropped, order[j])
			order[j] = i
			continue
		}
		at[k] = len(order)
		order = append(order, i)
	}
	if rec.Finished() {
		key, keys := rec.planKey(), make([]int64, len(results))
		for _, i := range order {
			keys[i] = key(&results[i])
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	}
	return append(order, dropped...), len(order)
}

// ReadRecordSummary reads results.json at path for a list of runs: without
// trials, tasks or task matrix (skipped, not decoded), and its task count.
func ReadRecordSummary(path string) (*Record, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, recordFileError(path, err)
	}
	rec, tasks, err := DecodeRecordSummary(b)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return rec, tasks, nil
}

// DecodeRecordSummary reads the bytes of a results.json as
// ReadRecordSummary does.
func DecodeRecordSummary(b []byte) (*Record, int, error) {
	rec := &Record{}
	v := struct {
		*Record
		Results    skipped    `json:"results"`
		Scores     skipped    `json:"scores"`
		TaskMatrix skipped    `json:"task_matrix"`
		Tasks      []struct{} `json:"tasks"`
	}{Record: rec}
	if err := decodeRecord(b, &v, &rec.SchemaVersion); err != nil {
		return nil, 0, err
	}
	return rec, len(v.Tasks), nil
}

// skipped is a member of results.json a reader passes over.
type skipped struct{}

func (*skipped) UnmarshalJSON([]byte) error { return nil }

// recordFileError says why the results.json at path could not be read.
func recordFileError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: no such file", path)
	}
	return fmt.Errorf("read %s: %w", path, err)
}

// DecodeRecord reads the bytes of a results.json (its trials are not
// read: adopt them).
func DecodeRecord(b []byte) (*Record, error) {
	var rec Record
	if err := decodeRecord(b, &rec, &rec.SchemaVersion); err != nil {
		return nil, err
	}
	return &rec, nil
}

// decodeRecord decodes the results.json in b into v, whose
// schema_version is *version, and checks that this forge reads it.
func decodeRecord(b []byte, v any, version *int) error {
	err := json.Unmarshal(b, v)
	if err == nil && *version >= 1 && *version <= SchemaVersion {
		return nil
	}
	// A future schema is reported as such, not as whatever field no longer
	// decodes.
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	herr := json.Unmarshal(b, &head)
	var syntax *json.SyntaxError
	var kind *json.UnmarshalTypeError
	switch {
	case len(bytes.TrimSpace(b)) == 0:
		return errors.New("not a results.json: the file is empty")
	case errors.As(herr, &syntax):
		return fmt.Errorf("not a results.json: not JSON (at byte %d: %w)", syntax.Offset, herr)
	case errors.As(herr, &kind) && kind.Field == "":
		return fmt.Errorf("not a results.json: want a JSON object, not %s", kind.Value)
	case herr != nil:
		return fmt.Errorf("not a results.json: %w", herr)
	case head.SchemaVersion == nil:
		return errors.New("not a results.json: no schema_version")
	case *head.SchemaVersion < 1 || *head.SchemaVersion > SchemaVersion:
		return fmt.Errorf("schema_version %d, this forge reads 1 to %d", *head.SchemaVersion, SchemaVersion)
	}
	return fmt.Errorf("not a results.json: %w", err)
}

// WriteRecord writes rec as a run's record: its results to trials.jsonl
// beside path, then the rest to path, each atomically.
func WriteRecord(path string, rec *Record) error {
	all := make([]*runner.Result, len(rec.Results))
	for i := range rec.Results {
		all[i] = &rec.Results[i]
	}
	err := WriteAtomic(filepath.Join(filepath.Dir(path), TrialsFile), func(w io.Writer) error {
		return writeTrials(w, all)
	})
	if err != nil {
		return err
	}
	return writeSummary(path, rec)
}

// writeSummary writes results.json: rec without its results, each scored
// trial's score in their place (those of Scores, when it is set).
func writeSummary(path string, rec *Record) error {
	sum := *rec
	sum.Results = nil
	if sum.Scores == nil {
		sum.Scores = rec.trialScores()
	}
	return WriteAtomic(path, func(w io.Writer) error { return encode(w, &sum) })
}

// trialScores lists the scores of the record's scored results.
func (rec *Record) trialScores() []TrialScore {
	var scores []TrialScore
	for _, r := range rec.Results {
		if r.Score != nil {
			scores = append(scores, TrialScore{CandidateID: r.CandidateID, TaskID: r.TaskID, Trial: r.Trial, Score: *r.Score})
		}
	}
	return scores
}

// MarshalRecord renders the record as one JSON document (EncodeRecord).
func MarshalRecord(rec *Record) ([]byte, error) {
	var b bytes.Buffer
	if err := EncodeRecord(&b, rec); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// EncodeRecord writes the record, its results inside, as one JSON document
// (the JSON report), which ReadRecord reads as it reads results.json.
func EncodeRecord(w io.Writer, rec *Record) error {
	doc := *rec
	doc.Scores = nil
	if doc.Results == nil {
		doc.Results = []runner.Result{}
	}
	return encode(w, &doc)
}

// encode writes rec as indented JSON, the lists that grow with a benchmark
// last, one element a line, encoded one at a time: never held whole.
func encode(w io.Writer, rec *Record) error {
	head := *rec
	head.Results, head.Scores, head.Tasks, head.TaskMatrix = nil, nil, nil, nil
	b, err := json.MarshalIndent(&head, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.Write(bytes.TrimSuffix(b, []byte("\n}")))
	lists := []struct {
		key string
		n   int
		at  func(i int) any
	}{
		{"tasks", len(rec.Tasks), func(i int) any { return &rec.Tasks[i] }},
		{"task_matrix", len(rec.TaskMatrix), func(i int) any { return &rec.TaskMatrix[i] }},
		{"scores", len(rec.Scores), func(i int) any { return &rec.Scores[i] }},
		{"results", len(rec.Results), func(i int) any { return &rec.Results[i] }},
	}
	for _, l := range lists {
		if l.n == 0 && (l.key != "results" || rec.Results == nil) {
			continue // as omitempty omits it
		}
		fmt.Fprintf(bw, ",\n  %q: [", l.key)
		for i := range l.n {
			line, err := json.Marshal(l.at(i))
			if err != nil {
				return fmt.Errorf("encode results: %s %d: %w", l.key, i, err)
			}
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString("\n    ")
			bw.Write(line)
		}
		if l.n > 0 {
			bw.WriteString("\n  ")
		}
		bw.WriteByte(']')
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}
