package record

// Writing a record: trials.jsonl, then results.json, each atomically.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write writes rec as a run's record: its results to trials.jsonl
// beside path, then the rest to path, each atomically.
func Write(path string, rec *Record) error {
	all := make([]*Trial, len(rec.Results))
	for i := range rec.Results {
		all[i] = &rec.Results[i]
	}
	err := WriteAtomic(filepath.Join(filepath.Dir(path), TrialsFile), func(w io.Writer) error {
		return writeTrials(w, all)
	})
	if err != nil {
		return err
	}
	return WriteSummary(path, rec)
}

// WriteSummary writes results.json: rec without its results, each scored
// trial's score in their place (those of Scores, when it is set).
func WriteSummary(path string, rec *Record) error {
	sum := *rec
	sum.Results = nil
	if sum.Scores == nil {
		sum.Scores = rec.TrialScores()
	}
	return WriteAtomic(path, func(w io.Writer) error { return encode(w, &sum) })
}

// TrialScores lists the scores of the record's scored results.
func (rec *Record) TrialScores() []TrialScore {
	var scores []TrialScore
	for _, r := range rec.Results {
		if r.Score != nil {
			scores = append(scores, TrialScore{CandidateID: r.CandidateID, TaskID: r.TaskID, Trial: r.Trial, Score: *r.Score})
		}
	}
	return scores
}

// Marshal renders the record as one JSON document (Encode).
func Marshal(rec *Record) ([]byte, error) {
	var b bytes.Buffer
	if err := Encode(&b, rec); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Encode writes the record, its results inside, as one JSON document
// (the JSON report), which Read reads as it reads results.json.
func Encode(w io.Writer, rec *Record) error {
	doc := *rec
	doc.Scores = nil
	if doc.Results == nil {
		doc.Results = []Trial{}
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

// WriteAtomic writes what write writes to path through a temporary file
// and a rename, so readers never see half a file.
func WriteAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	err = errors.Join(write(f), f.Close())
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
