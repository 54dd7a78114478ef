package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// A run's index: what the pages need of every trial (a few hundred bytes
// of its ~800), read once and then as the run gains trials, and where each
// trial's line is, so that a trial's page decodes that line alone.

// lineRef is where a trial's line is in the trials file: where it starts
// and its length, without its newline.
type lineRef struct {
	off int64
	n   int32
}

// slim is what the index decodes of a result's line: the fields the
// standings, the matrix, the comparison and the trials' list read. The
// decoder skips the rest (excerpts, submitted metrics, judges' reasons).
type slim struct {
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
	Cost              *record.Cost     `json:"cost"`
	Judges            []struct {
		Name  string `json:"name"`
		Error string `json:"error"`
	} `json:"judges"`
	// What says a trial is wrong (record.Trial.Wrong): its reward, and its
	// checks' counts and first failure.
	Reward *float64             `json:"reward"`
	Checks []record.CheckResult `json:"checks"`
}

// maxIndexedMessage is how much of an error message the index keeps (the
// notes show one line of it; the trial's page reads the whole).
const maxIndexedMessage = 300

// fill sets r, a zero result, to what s holds.
func (s *slim) fill(r *record.Trial) {
	r.CandidateID, r.TaskID, r.Trial, r.Success, r.ExitCode = s.CandidateID, s.TaskID, s.Trial, s.Success, s.ExitCode
	r.ErrorKind, r.ErrorMessage, r.RuntimeSeconds, r.Score = s.ErrorKind, s.ErrorMessage, s.RuntimeSeconds, s.Score
	r.Attempts, r.ArtifactBytes, r.ArtifactTruncated = s.Attempts, s.ArtifactBytes, s.ArtifactTruncated
	r.SecretInArtifact = s.SecretInArtifact
	r.OutputTruncated, r.SubmitError, r.Cost = s.OutputTruncated, s.SubmitError, s.Cost
	r.Reward = s.Reward
	for _, c := range s.Checks {
		if c.Passed < c.Of { // only a wrong trial's, and its first failure
			c.Failed = c.Failed[:min(1, len(c.Failed))]
			r.Checks = append(r.Checks, c)
		}
	}
	if len(r.ErrorMessage) > maxIndexedMessage {
		r.ErrorMessage = r.ErrorMessage[:maxIndexedMessage]
	}
	for _, j := range s.Judges {
		if j.Error != "" {
			r.Judges = append(r.Judges, record.JudgeResult{Name: j.Name, Error: j.Error})
		}
	}
}

// trialKey names a job.
type trialKey struct {
	candidate, task string
	trial           int
}

// runIndex is one run's index.
type runIndex struct {
	id, dir string
	path    string // results.json
	trials  string // its trials file
	// rec is the record with slim results (rec.Results), in plan order once
	// the run ended.
	rec *record.Record
	// lines[i] is where rec.Results[i] is; nil when the record holds its
	// results (then full holds them whole).
	lines []lineRef
	full  []record.Trial
	// While the run goes on: how far the trials file was read (bytes and
	// lines), and each job's place in rec.Results (a job played again
	// replaces its line).
	trialsOff   int64
	trialsLines int
	at          map[trialKey]int
	// byCell lists a suite's trials by candidate and task.
	byCell map[[2]string][]int

	mu      sync.Mutex // guards a live run's refresh and the derived pages
	derived *derived
}

// live reports whether the run has not ended (results.json has no
// finished_at): its trials come from the journal as they end.
func (x *runIndex) live() bool { return !x.rec.Finished() }

// stopped says when a live run forge no longer plays last gave a sign of
// life, or "" (record.Stopped).
func (x *runIndex) stopped() string {
	if !x.live() {
		return ""
	}
	if stopped, last := record.Stopped(x.dir, time.Now()); stopped {
		return last.UTC().Format(time.DateTime)
	}
	return ""
}

// indexRun reads the run whose results.json is path: its summary, then
// its trials' lines, decoded in batches by a worker a processor.
func indexRun(id, path string) (*runIndex, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rec, err := record.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	x := &runIndex{id: id, dir: filepath.Dir(path), path: path, trials: rec.TrialsPath(path), rec: rec, at: map[trialKey]int{}}
	if rec.Results != nil && rec.Finished() {
		x.full = rec.Results // schema 1 to 3: the results inside
		x.cells()
		return x, nil
	}
	rec.Results = nil
	if err := x.read(); err != nil {
		return nil, err
	}
	if rec.Finished() {
		x.score()
		x.cells()
	}
	return x, nil
}

// read reads what the trials file gained since the last read: every
// whole line (one being written is read next time). The caller holds
// x.mu, or x is not shared yet.
func (x *runIndex) read() error {
	f, err := os.Open(x.trials)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no trial has ended yet
	} else if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() == x.trialsOff {
		return err
	}
	slims, ends, err := record.ReadLines[slim](f, x.trialsOff, x.trials, x.trialsLines)
	if err != nil {
		return err
	}
	finished := x.rec.Finished() && len(x.rec.Results) == 0 // score arranges them
	if finished {
		x.rec.Results, x.lines = make([]record.Trial, 0, len(slims)), make([]lineRef, 0, len(slims))
	}
	for i := range slims {
		var r record.Trial
		slims[i].fill(&r)
		ref := lineRef{off: x.trialsOff, n: int32(ends[i] - x.trialsOff - 1)}
		if finished {
			x.rec.Results, x.lines = append(x.rec.Results, r), append(x.lines, ref)
		} else {
			x.put(r, ref)
		}
		x.trialsOff = ends[i]
	}
	x.trialsLines += len(slims)
	if len(slims) > 0 {
		x.derived = nil
		x.cells()
	}
	return nil
}

// put records a trial read from its line: a new one, or a job played
// again (--resume), whose later line replaces its first.
func (x *runIndex) put(r record.Trial, ref lineRef) {
	k := trialKey{r.CandidateID, r.TaskID, r.Trial}
	if i, ok := x.at[k]; ok {
		x.rec.Results[i], x.lines[i] = r, ref
		return
	}
	x.at[k] = len(x.rec.Results)
	x.rec.Results = append(x.rec.Results, r)
	x.lines = append(x.lines, ref)
}

// score gives a finished run's trials their scores and puts them in
// order (record.Record.Arrange), where they are.
func (x *runIndex) score() {
	order, n := x.rec.Arrange(x.rec.Results)
	record.Reorder(x.rec.Results, order)
	record.Reorder(x.lines, order)
	x.rec.Results, x.lines, x.at = x.rec.Results[:n], x.lines[:n], nil
}

// cells lists the trials of each candidate and task.
func (x *runIndex) cells() {
	x.byCell = map[[2]string][]int{}
	for i := range x.rec.Results {
		r := &x.rec.Results[i]
		k := [2]string{r.CandidateID, r.TaskID}
		x.byCell[k] = append(x.byCell[k], i)
	}
}

// result reads trial i whole: its line, decoded, and the line.
func (x *runIndex) result(i int) (*record.Trial, []byte, error) {
	if i < 0 || i >= len(x.rec.Results) {
		return nil, nil, fs.ErrNotExist
	}
	if x.lines == nil {
		r := x.full[i]
		return &r, nil, nil
	}
	ref := x.lines[i]
	path := x.trials
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	buf := make([]byte, ref.n)
	if _, err := f.ReadAt(buf, ref.off); err != nil {
		return nil, nil, fmt.Errorf("%s: read the line at %d: %w", path, ref.off, err)
	}
	var r record.Trial
	if err := json.Unmarshal(buf, &r); err != nil {
		return nil, nil, fmt.Errorf("%s: the line at %d: %w", path, ref.off, err)
	}
	return &r, buf, nil
}

// cache holds the indexes of the runs opened by their results.json's path,
// size and modification time: a rewritten record is read again.
type cache struct {
	mu   sync.Mutex
	runs map[string]*cached
}

type cached struct {
	size  int64
	mtime time.Time
	idx   *runIndex
	err   error
	ready chan struct{}
}

// peek returns the index of the run whose results.json is path when it is
// read already and still the file's; nil otherwise. It reads nothing.
func (c *cache) peek(path string) *runIndex {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.runs[path]
	if e == nil || e.size != fi.Size() || !e.mtime.Equal(fi.ModTime()) {
		return nil
	}
	select {
	case <-e.ready:
		if e.err == nil && !e.idx.live() {
			return e.idx
		}
	default:
	}
	return nil
}

// get returns the index of run id whose results.json is path, read again
// when changed; a live run's index reads what its trials gained.
func (c *cache) get(id, path string) (*runIndex, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.runs == nil {
		c.runs = map[string]*cached{}
	}
	e := c.runs[path]
	if e == nil || e.size != fi.Size() || !e.mtime.Equal(fi.ModTime()) {
		e = &cached{size: fi.Size(), mtime: fi.ModTime(), ready: make(chan struct{})}
		c.runs[path] = e
		c.mu.Unlock()
		e.idx, e.err = indexRun(id, path)
		close(e.ready)
	} else {
		c.mu.Unlock()
		<-e.ready // another request reads it
	}
	if e.err != nil {
		return nil, e.err
	}
	if e.idx.live() {
		e.idx.mu.Lock()
		err := e.idx.read()
		e.idx.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	return e.idx, nil
}
