package record

// trials.index: an index of a finished run's trials file, beside it. Per
// trial, where its line is and the facts a run's pages read of it
// (IndexedTrial), in the record's order (Arrange): a reader of 100,000
// trials reads a few megabytes instead of decoding every line. It stands
// for the files it was made of, and is never trusted once either changed
// (LoadIndex).

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/forge-run/forge/runner"
)

// IndexFile is the index of a finished run's trials, beside results.json.
const IndexFile = "trials.index"

// Index is a run's trials as its pages read them: each trial's line and
// facts, the ids they name numbered once (Names). A finished run's holds
// its record too, without its trials and their scores (Record): a reader
// need not decode results.json, whose task matrix alone is megabytes of
// JSON at 100,000 trials.
type Index struct {
	Record *Record
	Names  *Names
	Trials []IndexedTrial
	// of are the files it stands for, as they were when it was made: its
	// trials file (by its name beside results.json) and results.json.
	of struct {
		trialsName      string
		trials, results fileStamp
	}
}

// TrialsAt is the size (-1: none) and modification time, in nanoseconds,
// of the trials file x was made of.
func (x *Index) TrialsAt() (size, mtime int64) { return x.of.trials.size, x.of.trials.mtime }

// NewIndex is an empty index, for a run whose index is not read from a
// file (a live run's, an older record's).
func NewIndex() *Index { return &Index{Names: &Names{}} }

// IndexedTrial is a trial as an index keeps it: where its line is in the
// trials file (Off, Len, without its newline), who played it, and what
// the standings, the matrix, the comparison and the trials' list read of
// it (a few dozen bytes, not the trial). Trial gives it back as a Trial.
type IndexedTrial struct {
	Off           int64
	runtime       float64
	score, reward float64
	artifactBytes int64
	// message is the error message's first maxIndexedMessage bytes.
	message string
	notes   *trialNotes
	Len     int32
	// Candidate and Task are numbers of the index's Names.
	Candidate, Task uint32
	Trial           int32
	attempts        int32
	exitCode        int32
	kind            uint32 // a number of Names
	flags           uint8
}

// The facts an IndexedTrial keeps in a bit each.
const (
	hasSuccess = 1 << iota
	hasExitCode
	hasScore
	hasReward
	hasArtifactTruncated
	hasSecretInArtifact
	hasOutputTruncated
	hasNotes
)

// trialNotes are the facts few trials have.
type trialNotes struct {
	submitError string
	cost        *Cost
	passMark    *float64
	// judges are the judges that failed, name and error; checks the
	// checks some of which failed, with their first failure only.
	judges   []JudgeResult
	checks   []CheckResult
	tampered []string
}

// maxIndexedMessage is how much of an error message an index keeps (a
// list shows one line of it; the trial's page reads the whole).
const maxIndexedMessage = 300

// Success reports whether the trial succeeded.
func (t *IndexedTrial) Success() bool { return t.flags&hasSuccess != 0 }

// SecretInArtifact is the trial's Trial.SecretInArtifact.
func (t *IndexedTrial) SecretInArtifact() bool { return t.flags&hasSecretInArtifact != 0 }

// Entry is r as x indexes it, its line at off, n bytes long: what a list
// reads of it (an error message's first maxIndexedMessage bytes, the
// checks that failed with their first failure, the judges that failed).
func (x *Index) Entry(r *Trial, off int64, n int32) IndexedTrial {
	t := IndexedTrial{Off: off, Len: n, Candidate: x.Names.Number(r.CandidateID), Task: x.Names.Number(r.TaskID),
		Trial: int32(r.Trial), attempts: int32(r.Attempts), kind: x.Names.Number(string(r.ErrorKind)),
		runtime: r.RuntimeSeconds, artifactBytes: r.ArtifactBytes, message: r.ErrorMessage[:min(len(r.ErrorMessage), maxIndexedMessage)]}
	t.setFlag(hasSuccess, r.Success)
	t.setFlag(hasArtifactTruncated, r.ArtifactTruncated)
	t.setFlag(hasSecretInArtifact, r.SecretInArtifact)
	t.setFlag(hasOutputTruncated, r.OutputTruncated)
	if r.ExitCode != nil {
		t.flags, t.exitCode = t.flags|hasExitCode, int32(*r.ExitCode)
	}
	if r.Score != nil {
		t.setScore(*r.Score)
	}
	if r.Reward != nil {
		t.flags, t.reward = t.flags|hasReward, *r.Reward
	}
	n2 := trialNotes{submitError: r.SubmitError, cost: r.Cost, passMark: r.PassMark, tampered: r.Tampered}
	for _, c := range r.Checks {
		if c.Passed < c.Of { // only a wrong trial's, and its first failure
			c.Failed = c.Failed[:min(1, len(c.Failed))]
			n2.checks = append(n2.checks, c)
		}
	}
	for _, j := range r.Judges {
		if j.Error != "" {
			n2.judges = append(n2.judges, JudgeResult{Name: j.Name, Error: j.Error})
		}
	}
	if n2.submitError != "" || n2.cost != nil || n2.passMark != nil || len(n2.tampered) > 0 || len(n2.checks) > 0 || len(n2.judges) > 0 {
		t.flags, t.notes = t.flags|hasNotes, &n2
	}
	return t
}

func (t *IndexedTrial) setFlag(bit uint8, on bool) {
	if on {
		t.flags |= bit
	}
}

func (t *IndexedTrial) setScore(v float64) { t.flags, t.score = t.flags|hasScore, v }

// Trial is trial i of x as a Trial holding what x keeps of it (Entry).
func (x *Index) Trial(i int) Trial {
	var r Trial
	x.fill(&r, i)
	return r
}

// Results are every trial of x as Trial gives it.
func (x *Index) Results() []Trial {
	out := make([]Trial, len(x.Trials))
	for i := range out {
		x.fill(&out[i], i)
	}
	return out
}

// fill sets r, a zero Trial, to trial i of x.
func (x *Index) fill(r *Trial, i int) {
	t := &x.Trials[i]
	r.CandidateID, r.TaskID, r.Trial = x.Names.Name(t.Candidate), x.Names.Name(t.Task), int(t.Trial)
	r.Success, r.ErrorKind, r.ErrorMessage = t.Success(), runner.ErrorKind(x.Names.Name(t.kind)), t.message
	r.RuntimeSeconds, r.ArtifactBytes, r.Attempts = t.runtime, t.artifactBytes, int(t.attempts)
	r.ArtifactTruncated, r.OutputTruncated = t.flags&hasArtifactTruncated != 0, t.flags&hasOutputTruncated != 0
	r.SecretInArtifact = t.SecretInArtifact()
	if t.flags&hasExitCode != 0 {
		r.ExitCode = new(int(t.exitCode))
	}
	if t.flags&hasScore != 0 {
		r.Score = new(t.score)
	}
	if t.flags&hasReward != 0 {
		r.Reward = new(t.reward)
	}
	if n := t.notes; n != nil {
		r.SubmitError, r.Cost, r.PassMark, r.Tampered, r.Checks, r.Judges = n.submitError, n.cost, n.passMark, n.tampered, n.checks, n.judges
	}
}

// Names numbers the ids an index names (candidates, tasks, error kinds),
// each once; the zero value is empty.
type Names struct {
	list []string
	at   map[string]uint32
}

// Number is s's number, s numbered first when it is new.
func (n *Names) Number(s string) uint32 {
	if i, ok := n.at[s]; ok {
		return i
	}
	if n.at == nil {
		n.at = map[string]uint32{}
	}
	i := uint32(len(n.list))
	n.list = append(n.list, s)
	n.at[s] = i
	return i
}

// Lookup is s's number, false when s has none.
func (n *Names) Lookup(s string) (uint32, bool) {
	i, ok := n.at[s]
	return i, ok
}

// Name is the id numbered i.
func (n *Names) Name(i uint32) string { return n.list[i] }

// indexLine is what an index decodes of a trial's line: what Entry keeps.
// The decoder skips the rest (excerpts, submitted metrics, judges'
// reasons).
type indexLine struct {
	CandidateID       string           `json:"candidate_id"`
	TaskID            string           `json:"task_id"`
	Trial             int              `json:"trial"`
	Success           bool             `json:"success"`
	ExitCode          *int             `json:"exit_code"`
	ErrorKind         runner.ErrorKind `json:"error_kind"`
	ErrorMessage      string           `json:"error_message"`
	RuntimeSeconds    float64          `json:"runtime_seconds"`
	Score             *float64         `json:"score"`
	Attempts          int              `json:"attempts"`
	ArtifactBytes     int64            `json:"artifact_bytes"`
	ArtifactTruncated bool             `json:"artifact_truncated"`
	SecretInArtifact  bool             `json:"secret_in_artifact"`
	OutputTruncated   bool             `json:"output_truncated"`
	SubmitError       string           `json:"submit_error"`
	Cost              *Cost            `json:"cost"`
	Judges            []struct {
		Name  string `json:"name"`
		Error string `json:"error"`
	} `json:"judges"`
	// What says a trial is wrong (Trial.Wrong): its reward, its pass
	// mark, and its checks.
	Reward   *float64      `json:"reward"`
	PassMark *float64      `json:"pass_mark"`
	Checks   []CheckResult `json:"checks"`
	Tampered []string      `json:"tampered"`
}

// entry is the line l, at off and n bytes long, as x indexes it.
func (x *Index) entry(l *indexLine, off int64, n int32) IndexedTrial {
	r := Trial{Result: runner.Result{CandidateID: l.CandidateID, TaskID: l.TaskID, Trial: l.Trial, Success: l.Success,
		ExitCode: l.ExitCode, ErrorKind: l.ErrorKind, ErrorMessage: l.ErrorMessage, RuntimeSeconds: l.RuntimeSeconds,
		ArtifactBytes: l.ArtifactBytes, ArtifactTruncated: l.ArtifactTruncated, OutputTruncated: l.OutputTruncated,
		SubmitError: l.SubmitError, Reward: l.Reward, Tampered: l.Tampered},
		Checks: l.Checks, SecretInArtifact: l.SecretInArtifact, Cost: l.Cost, Attempts: l.Attempts, PassMark: l.PassMark, Score: l.Score}
	for _, j := range l.Judges {
		r.Judges = append(r.Judges, JudgeResult{Name: j.Name, Error: j.Error})
	}
	return x.Entry(&r, off, n)
}

// ReadLines reads the whole lines of the trials file f from off on, as
// the package's ReadLines does (path and first name them in errors), as
// x indexes them (Entry), and the offset after each.
func (x *Index) ReadLines(f *os.File, off int64, path string, first int) ([]IndexedTrial, []int64, error) {
	lines, ends, err := ReadLines[indexLine](f, off, path, first)
	if err != nil {
		return nil, nil, err
	}
	out := make([]IndexedTrial, len(lines))
	for i := range lines {
		out[i] = x.entry(&lines[i], off, int32(ends[i]-off-1))
		lines[i], off = indexLine{}, ends[i]
	}
	return out, ends, nil
}

// BuildIndex indexes the trials of the finished record rec, decoded from
// b, the bytes of its results.json at path (fi): every line of its trials
// file read once, arranged as Arrange arranges them.
func BuildIndex(path string, b []byte, fi fs.FileInfo, rec *Record) (*Index, error) {
	return indexTrials(path, rec, stampBytes(b, fi), nil)
}

// IndexRead is BuildIndex for a reader that has the trials already: rec,
// the finished record written at path, its scores in rec.Scores, and
// results, every line of its trials file decoded in the file's order
// (ReadTrials). A run that reads its trials back indexes them so, without
// decoding them again.
func IndexRead(path string, rec *Record, results []Trial) (*Index, error) {
	summary, err := stampPath(path)
	if err != nil {
		return nil, err
	}
	return indexTrials(path, rec, summary, results)
}

// indexTrials indexes the trials of rec, the finished record at path whose
// results.json is stamped summary: the lines of its trials file decoded,
// or results, not nil, those lines decoded already (IndexRead).
func indexTrials(path string, rec *Record, summary fileStamp, results []Trial) (*Index, error) {
	if !rec.Finished() {
		return nil, fmt.Errorf("%s: the run has not ended: its trials are not indexed", path)
	}
	trials := rec.TrialsPath(path)
	x := NewIndex()
	x.of.trialsName = filepath.Base(trials)
	f, err := os.Open(trials)
	switch {
	case errors.Is(err, fs.ErrNotExist) && results == nil:
		x.of.trials = absent // no trial ended
	case err != nil:
		return nil, err
	default:
		defer f.Close()
		if x.of.trials, err = stampFile(f); err != nil {
			return nil, fmt.Errorf("read %s: %w", trials, err)
		}
		if results == nil {
			x.Trials, _, err = x.ReadLines(f, 0, trials, 0)
		} else {
			x.Trials, err = x.entries(f, trials, results)
		}
		if err != nil {
			return nil, err
		}
	}
	x.arrange(rec, summary)
	return x, nil
}

// entries are results, every line of the trials file f at path decoded, as
// x indexes them.
func (x *Index) entries(f *os.File, path string, results []Trial) ([]IndexedTrial, error) {
	ends, err := lineEnds(f, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(ends) != len(results) {
		return nil, fmt.Errorf("%s: %d lines, not the %d trials read from it", path, len(ends), len(results))
	}
	out := make([]IndexedTrial, len(results))
	off := int64(0)
	for i := range results {
		out[i] = x.Entry(&results[i], off, int32(ends[i]-off-1))
		off = ends[i]
	}
	return out, nil
}

// arrange makes x, the trials file's lines in its order, the index of
// rec, whose results.json is stamped results: its trials arranged as
// Arrange arranges them, the record without them.
func (x *Index) arrange(rec *Record, results fileStamp) {
	x.of.results = results
	head := *rec
	head.Results, head.Scores = nil, nil
	x.Record = &head
	arranged := *rec // Arrange takes the scores; rec keeps them
	key := func(i int) trialKey {
		t := &x.Trials[i]
		return trialKey{x.Names.Name(t.Candidate), x.Names.Name(t.Task), int(t.Trial)}
	}
	order, n := arranged.arrange(len(x.Trials), key, func(i int, v float64) { x.Trials[i].setScore(v) })
	Reorder(x.Trials, order)
	x.Trials = x.Trials[:n:n]
}

// LoadIndex reads the index beside the results.json at path, whose bytes
// are b (fi), and the record in it: nil when there is none, or it does not
// stand for these bytes and the trials file as it is now (their size,
// modification time and checksum), or it cannot be read.
func LoadIndex(path string, b []byte, fi fs.FileInfo) *Index {
	dir := filepath.Dir(path)
	raw, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		return nil
	}
	x, err := decodeIndex(raw)
	if err != nil || x.of.results != stampBytes(b, fi) {
		return nil
	}
	trials, err := stampPath(filepath.Join(dir, x.of.trialsName))
	if err != nil || trials != x.of.trials {
		return nil
	}
	return x
}

// Write writes x beside the results.json at path, atomically.
func (x *Index) Write(path string) error {
	b, err := x.encode()
	if err != nil {
		return err
	}
	return WriteAtomic(filepath.Join(filepath.Dir(path), IndexFile), func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// WriteIndex indexes the trials of the finished run whose results.json is
// path (BuildIndex) and writes the index beside it: what forge does once
// it has written the finished results.json, so that the run's first
// reader finds it. A record holding its trials has none.
func WriteIndex(path string) error {
	b, fi, err := ReadStamped(path)
	if err != nil {
		return err
	}
	rec, err := Decode(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if rec.Results != nil {
		return nil
	}
	x, err := BuildIndex(path, b, fi, rec)
	if err != nil {
		return err
	}
	return x.Write(path)
}

// ReadStamped reads the file at path whole, and its size and modification
// time as it read it (one open file: the bytes are the file's then).
func ReadStamped(path string) ([]byte, fs.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, fi, nil
}
