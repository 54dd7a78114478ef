package forge

// trials.jsonl: the run's trials as a stream, one result a line, each
// appended in a single write as its job ends, before it is scored.

import (
	"bufio"
	"bytes"
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

// ReadTrials reads a trials.jsonl in order, decoded on every processor into
// one slice sized by counting lines first. A last line cut short is not a
// job that finished; any other line that is not a result is an error.
func ReadTrials(path string) ([]runner.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := countLines(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	results := make([]runner.Result, n)
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	rd := bufio.NewReaderSize(f, 1<<20)
	for first := 0; first < n; first += trialBatch {
		lines := make([][]byte, min(trialBatch, n-first))
		for i := range lines {
			if lines[i], err = rd.ReadBytes('\n'); err != nil {
				return nil, fmt.Errorf("read %s: %w", path, err) // the file was cut while read
			}
		}
		g.Go(func() error {
			for i, line := range lines {
				if err := json.Unmarshal(line, &results[first+i]); err != nil {
					return fmt.Errorf("%s:%d: not a result: %w", path, first+i+1, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return results, nil
}

// countLines counts the whole lines in r: a last line without its
// newline is not one.
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 1<<20)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}
