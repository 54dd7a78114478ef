package record

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
)

// TrialsWriter appends results to a run's trials.jsonl, so that a run
// killed at any moment keeps every job that had finished.
type TrialsWriter struct {
	mu sync.Mutex
	f  *os.File
	n  int // the file's lines
}

// OpenTrials opens dir's trials.jsonl for appending; fresh, it first holds
// the results in keep (a resumed run's finished jobs).
func OpenTrials(dir string, keep []*Trial) (*TrialsWriter, error) {
	path := filepath.Join(dir, TrialsFile)
	if err := WriteAtomic(path, func(w io.Writer) error { return writeTrials(w, keep) }); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("trials: %w", err)
	}
	return &TrialsWriter{f: f, n: len(keep)}, nil
}

// Add appends r's line and returns its number in the file, from 0.
func (t *TrialsWriter) Add(r *Trial) (int, error) {
	line, err := trialLine(r)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := t.f.Write(line); err != nil {
		return 0, fmt.Errorf("trials: %w", err)
	}
	t.n++
	return t.n - 1, nil
}

// AddAll appends the results' lines, buffered: the lines of the jobs a run
// never started, once every job has ended. It returns the number of the
// first in the file.
func (t *TrialsWriter) AddAll(results []*Trial) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := writeTrials(t.f, results); err != nil {
		return 0, err
	}
	t.n += len(results)
	return t.n - len(results), nil
}

// Close closes the file.
func (t *TrialsWriter) Close() error { return t.f.Close() }

// trialLine is r's line: r unscored (results.json holds the scores),
// with its newline.
func trialLine(r *Trial) ([]byte, error) {
	unscored := *r
	unscored.Score = nil
	// Its own MarshalJSON, not json.Marshal's: that would check and
	// compact the bytes again, doubling a line's cost.
	line, err := unscored.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("trials: %s: %w", r.CandidateID, err)
	}
	return append(line, '\n'), nil
}

// writeTrials writes the results' lines to w.
func writeTrials(w io.Writer, results []*Trial) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	for _, r := range results {
		line, err := trialLine(r)
		if err == nil {
			_, err = bw.Write(line)
		}
		if err != nil {
			return err
		}
	}
	return bw.Flush()
}

// trialBatch is how many lines ReadLines hands a decoder at once.
const trialBatch = 1024

// ReadTrials reads a trials.jsonl (ReadLines).
func ReadTrials(path string) ([]Trial, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	results, _, err := ReadLines[Trial](f, 0, path, 0)
	return results, err
}

// ReadLines reads the whole lines of f from offset off on, each decoded as
// JSON into a T on every processor, in order, and the offset after each.
// It counts them first, so that 100,000 results are not held twice. A
// last line cut short is not one (its job had not finished); a line that
// does not decode is an error naming path and its line, the lines before
// off being first.
func ReadLines[T any](f *os.File, off int64, path string, first int) ([]T, []int64, error) {
	ends, err := lineEnds(f, off)
	if err == nil {
		_, err = f.Seek(off, io.SeekStart)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	out := make([]T, len(ends))
	var g errgroup.Group
	procs := runtime.GOMAXPROCS(0)
	g.SetLimit(procs)
	batch := max(1, min(trialBatch, (len(ends)+procs-1)/procs)) // a few lines, too, on every processor
	start := off
	for b := 0; b < len(ends); b += batch {
		n := min(batch, len(ends)-b)
		// A batch's lines in one buffer: one allocation, not one a line.
		buf := make([]byte, ends[b+n-1]-start)
		if _, err := io.ReadFull(f, buf); err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", path, err) // the file was cut while read
		}
		at := start
		start = ends[b+n-1]
		g.Go(func() error {
			for i := range n {
				line := buf[:ends[b+i]-at]
				buf, at = buf[len(line):], ends[b+i]
				if err := json.Unmarshal(line, &out[b+i]); err != nil {
					return fmt.Errorf("%s:%d: not a result: %w", path, first+b+i+1, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return out, ends, nil
}

// readBuffer is a buffer to read f from off with: what is left of it, from
// 64 KiB (a live run's file grows while it is read) to 1 MiB (a large
// allocation costs more than the reads it saves).
func readBuffer(f *os.File, off int64) []byte {
	n := int64(1 << 20)
	if fi, err := f.Stat(); err == nil {
		n = min(n, max(fi.Size()-off+1, 64<<10))
	}
	return make([]byte, n)
}

// lineEnds lists the offset after each whole line of f from off on.
func lineEnds(f *os.File, off int64) ([]int64, error) {
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	var ends []int64
	buf := readBuffer(f, off)
	for {
		k, err := f.Read(buf)
		for at, b := off, buf[:k]; ; {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break
			}
			at, b = at+int64(i)+1, b[i+1:]
			ends = append(ends, at)
		}
		off += int64(k)
		if errors.Is(err, io.EOF) {
			return ends, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
