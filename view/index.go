package view

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/forge-run/forge/record"
)

// A run's index: what the pages need of every trial (record.Index: a few
// dozen bytes of its ~1,000), and where each trial's line is, so that a
// trial's page decodes that line alone. A finished run's is its
// record.IndexFile, made once (by forge, or here when it is missing or no
// longer the files'); a live run's is read from its trials file as it
// gains trials.

// trialKey names a job: its candidate and task (numbers of the index's
// names) and trial.
type trialKey struct {
	candidate, task uint32
	trial           int32
}

// runIndex is one run's index.
type runIndex struct {
	id, dir string
	path    string // results.json
	trials  string // its trials file
	// rec is the record without its results.
	rec *record.Record
	// idx holds the trials, in plan order once the run ended.
	idx *record.Index
	// full holds the trials whole when the record holds them (schema 1
	// to 3): idx's lines are then in no file.
	full []record.Trial
	// While the run goes on: how far the trials file was read (bytes and
	// lines), and each job's place in idx (a job played again replaces
	// its line).
	trialsOff   int64
	trialsLines int
	at          map[trialKey]int
	// byCell lists the trials by candidate and task (cellOf), each
	// cell's in their order: 4 bytes a trial.
	byCell []int32

	mu      sync.Mutex // guards a live run's refresh and the derived pages
	derived *derived
}

// fileAt is a file's size (-1: no file) and modification time (ns).
type fileAt struct{ size, mtime int64 }

func fileAtOf(fi fs.FileInfo) fileAt { return fileAt{fi.Size(), fi.ModTime().UnixNano()} }

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

// count is how many trials the index holds.
func (x *runIndex) count() int { return len(x.idx.Trials) }

// trial is trial i as the lists read it: the record's own when it holds
// its trials, else what the index keeps.
func (x *runIndex) trial(i int) record.Trial {
	if x.full != nil {
		return x.full[i]
	}
	return x.idx.Trial(i)
}

// results are every trial as trial gives it.
func (x *runIndex) results() []record.Trial {
	if x.full != nil {
		return x.full
	}
	return x.idx.Results()
}

// candidate is trial i's candidate.
func (x *runIndex) candidate(i int) string { return x.idx.Names.Name(x.idx.Trials[i].Candidate) }

// indexRun reads the run whose results.json is path: a finished run's
// index (record.LoadIndex, else made and kept beside it), or its summary
// and its trials' lines (a live run, an older record holding them).
func indexRun(id, path string) (*runIndex, error) {
	b, fi, err := record.ReadStamped(path)
	if err != nil {
		return nil, err
	}
	idx := record.LoadIndex(path, b, fi)
	var rec *record.Record
	if idx != nil {
		rec = idx.Record
	} else if rec, err = record.Decode(b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	x := &runIndex{id: id, dir: filepath.Dir(path), path: path, trials: rec.TrialsPath(path), rec: rec, idx: idx}
	switch {
	case idx != nil:
	case rec.Results != nil && rec.Finished(): // schema 1 to 3: the results inside
		x.idx, x.full, rec.Results = record.NewIndex(), rec.Results, nil
		for i := range x.full {
			x.idx.Trials = append(x.idx.Trials, x.idx.Entry(&x.full[i], 0, 0))
		}
	case rec.Finished():
		if x.idx, err = record.BuildIndex(path, b, fi, rec); err != nil {
			return nil, err
		}
		x.idx.Write(path) // a run the viewer may not write to keeps it in memory only
		x.rec = x.idx.Record
	default:
		x.idx, x.at = record.NewIndex(), map[trialKey]int{}
		if err := x.read(); err != nil {
			return nil, err
		}
	}
	x.cells()
	return x, nil
}

// read reads what a live run's trials file gained since the last read:
// every whole line (one being written is read next time). The caller
// holds x.mu, or x is not shared yet.
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
	trials, ends, err := x.idx.ReadLines(f, x.trialsOff, x.trials, x.trialsLines)
	if err != nil || len(trials) == 0 {
		return err
	}
	for i := range trials {
		x.put(trials[i])
	}
	x.trialsOff, x.trialsLines = ends[len(ends)-1], x.trialsLines+len(trials)
	x.derived = nil
	x.cells()
	return nil
}

// put records a trial read from its line: a new one, or a job played
// again (--resume), whose later line replaces its first.
func (x *runIndex) put(t record.IndexedTrial) {
	k := trialKey{t.Candidate, t.Task, t.Trial}
	if i, ok := x.at[k]; ok {
		x.idx.Trials[i] = t
		return
	}
	x.at[k] = len(x.idx.Trials)
	x.idx.Trials = append(x.idx.Trials, t)
}

// cellOf is trial i's candidate and task, as one number.
func (x *runIndex) cellOf(i int32) uint64 {
	t := &x.idx.Trials[i]
	return uint64(t.Candidate)<<32 | uint64(t.Task)
}

// cells lists the trials by candidate and task.
func (x *runIndex) cells() {
	x.byCell = make([]int32, len(x.idx.Trials))
	for i := range x.byCell {
		x.byCell[i] = int32(i)
	}
	slices.SortFunc(x.byCell, func(a, b int32) int { return cmp.Or(cmp.Compare(x.cellOf(a), x.cellOf(b)), cmp.Compare(a, b)) })
}

// cell lists the trials of candidate on task, in their order.
func (x *runIndex) cell(candidate, task string) []int32 {
	c, ok := x.idx.Names.Lookup(candidate)
	t, tok := x.idx.Names.Lookup(task)
	if !ok || !tok {
		return nil
	}
	k := uint64(c)<<32 | uint64(t)
	lo, _ := slices.BinarySearchFunc(x.byCell, k, func(i int32, k uint64) int { return cmp.Compare(x.cellOf(i), k) })
	hi := lo
	for hi < len(x.byCell) && x.cellOf(x.byCell[hi]) == k {
		hi++
	}
	return x.byCell[lo:hi]
}

// firstURL links the first trial of candidate on task, "" when there is
// none.
func (x *runIndex) firstURL(candidate, task string) string {
	if ts := x.cell(candidate, task); len(ts) > 0 {
		return trialURL(x.id, int(ts[0]))
	}
	return ""
}

// errNoTrial says a trial's number is not one of the run's.
var errNoTrial = errors.New("no such trial")

// errMoved says a trial's line is not where the index says: its trials
// file changed since it was indexed.
var errMoved = errors.New("the trials file changed")

// result reads trial i whole: its line, decoded; errMoved when the line is
// another trial's.
func (x *runIndex) result(i int) (*record.Trial, error) {
	if i < 0 || i >= x.count() {
		return nil, errNoTrial
	}
	if x.full != nil {
		r := x.full[i]
		return &r, nil
	}
	t := &x.idx.Trials[i]
	path := x.trials
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, t.Len)
	if _, err := f.ReadAt(buf, t.Off); err != nil {
		return nil, fmt.Errorf("%s: read the line at %d: %w: %w", path, t.Off, errMoved, err)
	}
	var r record.Trial
	if err := json.Unmarshal(buf, &r); err != nil {
		return nil, fmt.Errorf("%s: the line at %d: %w: %w", path, t.Off, errMoved, err)
	}
	names := x.idx.Names
	if r.CandidateID != names.Name(t.Candidate) || r.TaskID != names.Name(t.Task) || r.Trial != int(t.Trial) {
		return nil, fmt.Errorf("%s: the line at %d is not trial %d's: %w", path, t.Off, i+1, errMoved)
	}
	if r.Score == nil { // a line is written before the run scores it: the index has its score
		r.Score = x.idx.Trial(i).Score
	}
	return &r, nil
}

// cache holds the indexes of the runs opened by their results.json's path,
// size and modification time: a rewritten record is read again, and so is
// a finished run whose trials file changed.
type cache struct {
	mu   sync.Mutex
	runs map[string]*cached
}

type cached struct {
	at    fileAt
	idx   *runIndex
	err   error
	ready chan struct{}
}

// stale reports whether e is not the record at, or a finished run's
// trials file changed since it was indexed; one being read is not.
func (e *cached) stale(at fileAt) bool {
	if e.at != at {
		return true
	}
	select {
	case <-e.ready:
	default:
		return false
	}
	if e.err != nil || e.idx.live() || e.idx.full != nil {
		return false
	}
	now := fileAt{size: -1} // no file
	if fi, err := os.Stat(e.idx.trials); err == nil {
		now = fileAtOf(fi)
	}
	size, mtime := e.idx.idx.TrialsAt() // the file it was indexed from
	return now != fileAt{size, mtime}
}

// forget drops the index of the run whose results.json is path.
func (c *cache) forget(path string) {
	c.mu.Lock()
	delete(c.runs, path)
	c.mu.Unlock()
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
	if e == nil || e.stale(fileAtOf(fi)) {
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
	at := fileAtOf(fi)
	c.mu.Lock()
	e := c.runs[path]
	if e == nil || e.stale(at) {
		e = &cached{at: at, ready: make(chan struct{})}
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
