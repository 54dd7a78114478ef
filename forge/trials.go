package forge

// trials.jsonl: the run's trials as a stream, one result a line, each
// appended in a single write as its job ends, before it is scored.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/forge-run/forge/runner"
)

// trialsFile appends results to a run's trials.jsonl, so that a run killed
// at any moment keeps every job that had finished.
type trialsFile struct {
	mu sync.Mutex
	f  *os.File
}

// openTrials opens dir's trials.jsonl for appending; fresh, it first holds
// the results in keep (a resumed run's finished jobs).
func openTrials(dir string, keep []*runner.Result) (*trialsFile, error) {
	path := filepath.Join(dir, TrialsFile)
	err := WriteAtomic(path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<16)
		for _, r := range keep {
			if err := writeTrial(bw, r); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("trials: %w", err)
	}
	return &trialsFile{f: f}, nil
}

// add appends r's line.
func (t *trialsFile) add(r *runner.Result) error {
	line, err := trialLine(r)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := t.f.Write(line); err != nil {
		return fmt.Errorf("trials: %w", err)
	}
	return nil
}

func (t *trialsFile) close() error { return t.f.Close() }

// trialLine is r's line: r unscored (results.json holds the scores),
// with its newline.
func trialLine(r *runner.Result) ([]byte, error) {
	unscored := *r
	unscored.Score = nil
	line, err := json.Marshal(&unscored)
	if err != nil {
		return nil, fmt.Errorf("trials: %s: %w", r.CandidateID, err)
	}
	return append(line, '\n'), nil
}

func writeTrial(w io.Writer, r *runner.Result) error {
	line, err := trialLine(r)
	if err == nil {
		_, err = w.Write(line)
	}
	return err
}

// writeTrials writes results as trials.jsonl.
func writeTrials(w io.Writer, results []runner.Result) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	for i := range results {
		if err := writeTrial(bw, &results[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// trialBatch is how many lines ReadTrials hands a decoder at once.
const trialBatch = 1024

// ReadTrials reads a trials.jsonl: every result, in the file's order,
// decoded on every processor. A last line cut short (the run was killed
// while writing it) is not a job that finished; any other line that is
// not a result is an error naming it.
func ReadTrials(path string) ([]runner.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var batches [][]runner.Result
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	rd := bufio.NewReaderSize(f, 1<<20)
	first := 1 // the line number of the batch's first line
	for done := false; !done; {
		var lines [][]byte
		for len(lines) < trialBatch {
			line, err := rd.ReadBytes('\n')
			if len(line) > 0 && line[len(line)-1] == '\n' {
				lines = append(lines, line)
				continue
			}
			if !errors.Is(err, io.EOF) && err != nil {
				return nil, fmt.Errorf("read %s: %w", path, err)
			}
			done = true // the end, or a torn last line
			break
		}
		batches = append(batches, make([]runner.Result, len(lines)))
		out, at := batches[len(batches)-1], first
		first += len(lines)
		g.Go(func() error {
			for i, line := range lines {
				if err := json.Unmarshal(line, &out[i]); err != nil {
					return fmt.Errorf("%s:%d: not a result: %w", path, at+i, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	results := make([]runner.Result, 0, first-1)
	for _, b := range batches {
		results = append(results, b...)
	}
	return results, nil
}
