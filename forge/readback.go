package forge

// The end of a run: its trials read back from trials.jsonl, each put in
// its job's place as the run noted it, for the caller's reports.

import (
	"path/filepath"
	"slices"

	"github.com/forge-run/forge/record"
)

// addLeft appends the lines of the jobs that never finished (final), in
// plan order.
func (s *state) addLeft(left []*record.Trial) error {
	k, err := s.trials.AddAll(left)
	if err != nil {
		return err
	}
	for i, done := range s.done {
		if !done {
			s.placed(k, i)
			k++
		}
	}
	return nil
}

// placed notes that line k of trials.jsonl is job i's.
func (s *state) placed(k, i int) {
	if k < len(s.lineOf) { // else more lines than jobs: readBack arranges them
		s.lineOf[k] = int32(i)
	}
}

// readBack gives the record its trials, read back whole from trials.jsonl
// for the caller's reports: each line put in its job's place (lineOf), with
// the score the run gave it. A file whose lines are not the plan's jobs
// one each (a line that failed to write) is arranged by the trials' names
// and scores in results.json instead (record.Record.Adopt), which takes
// two maps of every trial more.
func (s *state) readBack() error {
	results, err := record.ReadTrials(filepath.Join(s.dir, record.TrialsFile))
	if err != nil {
		return err
	}
	// trials.index, in the file's order, for the run's first reader (one
	// that finds none makes it: record.WriteIndex).
	path := filepath.Join(s.dir, record.ResultsFile)
	if x, err := record.IndexRead(path, s.rec, results); err == nil {
		x.Write(path)
	}
	order := s.planOrder()
	if order == nil || len(results) != len(order) || len(s.scores) != len(order) {
		s.rec.Adopt(results)
		return nil
	}
	record.Reorder(results, order)
	for i := range results {
		results[i].Score = s.scores[i]
	}
	s.rec.Results, s.rec.Scores = results, nil
	return nil
}

// planOrder is, for each job of the plan, the line of trials.jsonl that
// holds it (record.Reorder's order); nil unless each job has one line.
func (s *state) planOrder() []int {
	order := slices.Repeat([]int{-1}, len(s.lineOf))
	for k, i := range s.lineOf {
		if i < 0 || order[i] >= 0 {
			return nil
		}
		order[i] = k
	}
	return order
}
