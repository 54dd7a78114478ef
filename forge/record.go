package forge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// SchemaVersion is results.json's schema_version: 3 since a record holds
// excerpts of each job's output and the paths of the whole files (2 since
// suites: tasks, task_id). Records of versions 1 and 2, which hold whole
// outputs, are read as they are.
const SchemaVersion = 3

// readsSchema reports whether this forge reads a record of version v.
func readsSchema(v int) bool { return v >= 1 && v <= SchemaVersion }

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
	// Trials is the trials per candidate the run plays (schema 3; older
	// records say it only through their results).
	Trials int `json:"trials,omitempty"`
	// Shard is the share of the jobs a shard run played (--shard K/N);
	// MissingShards are the shards a merged run lacks (forge merge
	// --allow-partial). Either way the record gives no verdict (partial).
	Shard         *Shard  `json:"shard,omitempty"`
	MissingShards []Shard `json:"missing_shards,omitempty"`
	// Environments are what the run did to make each of its environments
	// ready, in the order it did it.
	Environments []EnvironmentBuilt `json:"environments,omitempty"`
	// Interrupted is true when the run was cancelled before every job ended.
	Interrupted bool `json:"interrupted"`
	// BudgetReached says the run stopped starting jobs at its budget
	// (--max-cost, budget:); Interrupted is then true too.
	BudgetReached *BudgetStop        `json:"budget_reached,omitempty"`
	Results       []runner.Result    `json:"results"`
	Standings     []scoring.Standing `json:"standings"`
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

// ReadRecord reads a run's results.json. Its errors name the file and say
// what is wrong with it: missing, not JSON, or a schema_version this forge
// does not read.
func ReadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, recordFileError(path, err)
	}
	rec, err := DecodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rec.FinishedAt.IsZero() {
		// Still running, or killed: its finished jobs are in the journal.
		switch jr, err := readJournal(filepath.Join(filepath.Dir(path), JournalFile)); {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			rec.Results = jr
		}
	}
	return rec, nil
}

// trials is the trials per candidate the run plays: Trials, or for a
// record before schema 3 the highest trial among its results.
func (r *Record) trials() int {
	if r.Trials > 0 {
		return r.Trials
	}
	n := 0
	for _, res := range r.Results {
		n = max(n, res.Trial)
	}
	return n
}

// Finished reports whether the run ended (results.json was written whole),
// even if interrupted; a run still under way, or killed, has not.
func (rec *Record) Finished() bool { return !rec.FinishedAt.IsZero() }

// DecodeRecord reads the bytes of a results.json.
func DecodeRecord(b []byte) (*Record, error) {
	// Check the version first, so a future schema is reported as such and
	// not as whatever field no longer decodes.
	version, err := schemaVersionOf(b)
	if err != nil {
		// The whole document's own error says best where it goes wrong.
		var whole json.RawMessage
		if werr := json.Unmarshal(b, &whole); werr != nil {
			err = werr
		}
	}
	var syntax *json.SyntaxError
	switch {
	case len(bytes.TrimSpace(b)) == 0:
		return nil, errors.New("not a results.json: the file is empty")
	case errors.As(err, &syntax):
		return nil, fmt.Errorf("not a results.json: not JSON (at byte %d: %w)", syntax.Offset, err)
	case err != nil:
		return nil, fmt.Errorf("not a results.json: %w", err)
	case version == nil:
		return nil, errors.New("not a results.json: no schema_version")
	case !readsSchema(*version):
		return nil, fmt.Errorf("schema_version %d, this forge reads 1 to %d", *version, SchemaVersion)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); errors.As(err, &syntax) {
		return nil, fmt.Errorf("not a results.json: not JSON (at byte %d: %w)", syntax.Offset, err)
	} else if err != nil {
		return nil, fmt.Errorf("not a results.json: %w", err)
	}
	return &rec, nil
}

// schemaVersionOf reads the schema_version of the record in b, nil when it
// has none. forge writes it first, so a record of any size is read no
// further than its first line; the keys before it, in a record written
// otherwise, are skipped.
func schemaVersionOf(b []byte) (*int, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil {
		return nil, err
	} else if tok == json.Delim('[') {
		return nil, errors.New("want a JSON object, not a list")
	} else if tok != json.Delim('{') {
		return nil, fmt.Errorf("want a JSON object, not %s", jsonKind(tok))
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if key == "schema_version" {
			var v *int
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("schema_version: %w", err)
			}
			return v, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// WriteRecord writes rec to path atomically.
func WriteRecord(path string, rec *Record) error {
	return WriteAtomic(path, func(w io.Writer) error { return EncodeRecord(w, rec) })
}

// MarshalRecord renders results.json (EncodeRecord).
func MarshalRecord(rec *Record) ([]byte, error) {
	var b bytes.Buffer
	if err := EncodeRecord(&b, rec); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// EncodeRecord writes results.json to w: indented, one result per line (a
// record of 100,000 trials stays readable and greppable, and is written
// one result at a time), with a trailing newline.
func EncodeRecord(w io.Writer, rec *Record) error {
	return encodeRecord(w, rec, func(n int, w *bufio.Writer) error {
		b, err := json.Marshal(&rec.Results[n])
		w.Write(b)
		return err
	})
}

// oneALine are the record's lists that grow with the benchmark: besides
// its results, its tasks and its task matrix (a few lines a task when
// indented whole: 20 MB of a 25,000-task suite's record, and most of the
// time to write it). Like the results, each element is one line.
var oneALine = map[string]bool{"tasks": true, "task_matrix": true}

// encodeRecord writes results.json to w as EncodeRecord does, result n
// written by write, as json.Marshal writes it. The record's other members
// are indented as json.MarshalIndent indents them.
func encodeRecord(w io.Writer, rec *Record, write func(n int, w *bufio.Writer) error) error {
	head := *rec
	head.Results = nil
	b, err := json.Marshal(&head)
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteByte('{')
	var indented bytes.Buffer
	for i, m := range elements(b) {
		if i > 0 {
			bw.WriteByte(',')
		}
		k := bytes.Index(m, []byte(`":`)) + 1 // the record's keys are plain
		name, v := string(m[1:k-1]), m[k+1:]
		bw.WriteString("\n  ")
		bw.Write(m[:k])
		bw.WriteString(": ")
		switch {
		case name == "results":
			err = writeLines(bw, len(rec.Results), func(n int) error {
				if err := write(n, bw); err != nil {
					return fmt.Errorf("%s: %w", rec.Results[n].CandidateID, err)
				}
				return nil
			})
		case oneALine[name] && v[0] == '[':
			elems := elements(v)
			err = writeLines(bw, len(elems), func(n int) error {
				_, err := bw.Write(elems[n])
				return err
			})
		default:
			indented.Reset()
			err = json.Indent(&indented, v, "  ", "  ")
			bw.Write(indented.Bytes())
		}
		if err != nil {
			return fmt.Errorf("encode results: %w", err)
		}
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// elements splits b, a JSON object or array as json.Marshal writes it
// (compact), into its members or elements, each as b holds it.
func elements(b []byte) [][]byte {
	var out [][]byte
	depth, start := 0, 1
	str, esc := false, false
	for i, c := range b {
		switch {
		case esc:
			esc = false
		case str:
			esc = c == '\\'
			str = c != '"'
		case c == '"':
			str = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth == 0 && i > start {
				out = append(out, b[start:i])
			}
		case c == ',' && depth == 1:
			out = append(out, b[start:i])
			start = i + 1
		}
	}
	return out
}

// writeLines writes an array of n elements, element i written by write,
// one a line, indented as a member of the record's.
func writeLines(bw *bufio.Writer, n int, write func(i int) error) error {
	bw.WriteByte('[')
	for i := range n {
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		if err := write(i); err != nil {
			return err
		}
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	return bw.WriteByte(']')
}
