package record

// Reading a record: results.json decoded, whatever its layout, with the
// trials of trials.jsonl in their place.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Read reads the run whose results.json is path, with its trials
// (TrialsPath, or inside an older results.json). Its errors name the file
// and say what is wrong: missing, not JSON, or an unknown schema_version.
func Read(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, recordFileError(path, err)
	}
	rec, err := Decode(b)
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
	rec.Adopt(results)
	return rec, nil
}

// TrialsPath is where the trials of the record at path are: trials.jsonl
// beside it, or an unfinished schema 3 run's journal.
func (rec *Record) TrialsPath(path string) string {
	if rec.SchemaVersion < 4 {
		return filepath.Join(filepath.Dir(path), JournalFile)
	}
	return filepath.Join(filepath.Dir(path), TrialsFile)
}

// Adopt makes results, read from the run's trials, the record's
// (Arrange), put in order where they are.
func (rec *Record) Adopt(results []Trial) {
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

// trialKey names a trial.
type trialKey struct {
	candidate, task string
	trial           int
}

// Arrange gives results, read from the run's trials, the scores
// results.json keeps for them (Scores, left empty) and orders them
// (Reorder): first the n the record holds, a trial's last line only
// (--resume played it again), in plan order once the run ended, else in
// the file's; then the lines it drops.
func (rec *Record) Arrange(results []Trial) (order []int, n int) {
	key := func(i int) trialKey { r := &results[i]; return trialKey{r.CandidateID, r.TaskID, r.Trial} }
	return rec.arrange(len(results), key, func(i int, v float64) { results[i].Score = &v })
}

// arrange is Arrange of n trials, each named by key and given its score
// by score.
func (rec *Record) arrange(n int, key func(i int) trialKey, score func(i int, v float64)) (order []int, kept int) {
	if len(rec.Scores) > 0 {
		scores := make(map[trialKey]float64, len(rec.Scores))
		for _, s := range rec.Scores {
			scores[trialKey{s.CandidateID, s.TaskID, s.Trial}] = s.Score
		}
		for i := range n {
			if v, ok := scores[key(i)]; ok {
				score(i, v)
			}
		}
		rec.Scores = nil
	}
	at := make(map[trialKey]int, n)
	order = make([]int, 0, n)
	var dropped []int
	for i := range n {
		k := key(i)
		if j, ok := at[k]; ok {
			dropped = append(dropped, order[j])
			order[j] = i
			continue
		}
		at[k] = len(order)
		order = append(order, i)
	}
	if rec.Finished() {
		plan, keys := rec.planKey(), make([]int64, n)
		for _, i := range order {
			keys[i] = plan(key(i))
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	}
	return append(order, dropped...), len(order)
}

// planKey gives each of the record's trials a number that orders them as
// forge's plan has them (forge's Manifest.Plan): without tasks, by
// candidate then trial; with tasks, task by task, trial by trial, the
// candidates rotated by the task's place. forge's TestPlanOrderIsThePlans
// holds the two together.
func (rec *Record) planKey() func(k trialKey) int64 {
	cands := make(map[string]int64, len(rec.Candidates))
	for i, c := range rec.Candidates {
		cands[c] = int64(i)
	}
	tasks := make(map[string]int64, len(rec.Tasks))
	for i, t := range rec.Tasks {
		tasks[t.ID] = int64(i)
	}
	n := int64(max(len(rec.Candidates), 1))
	return func(k trialKey) int64 {
		c, trial := cands[k.candidate], int64(k.trial)
		if len(tasks) == 0 {
			return c<<24 | trial
		}
		t := tasks[k.task]
		return t<<44 | trial<<24 | (c-t%n+n)%n
	}
}

// ReadSummary reads results.json at path for a list of runs: without
// trials, tasks or task matrix (skipped, not decoded), and its task count.
func ReadSummary(path string) (*Record, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, recordFileError(path, err)
	}
	rec, tasks, err := DecodeSummary(b)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return rec, tasks, nil
}

// DecodeSummary reads the bytes of a results.json as
// ReadSummary does.
func DecodeSummary(b []byte) (*Record, int, error) {
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

// Decode reads the bytes of a results.json (its trials are not
// read: Adopt them).
func Decode(b []byte) (*Record, error) {
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
