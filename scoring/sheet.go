package scoring

import (
	"iter"
	"sync"

	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// Sheet gathers a run's trials as they end, each kept as what scoring reads
// of it: its names interned, its numbers and each scorer's raw value, not
// the whole record.Trial: about 100 bytes a trial with one scorer, where a
// record.Trial is 800 and more.
// Set may be called from many goroutines, each with trials of its own.
type Sheet struct {
	scorers []prepared
	suite   Suite
	tasks   map[string]*Task

	mu    sync.Mutex
	ids   map[string]int32
	names []string

	rows []row
	// values are each trial's scorers' raw values: [trial*len(scorers)+j].
	values []trialValue
}

// row is one trial as a Sheet keeps it.
type row struct {
	candidate, task int32 // in Sheet.names
	trial           int32
	success         bool
	kind            runner.ErrorKind
	message         string // the error message of a trial ended by no fault
	runtime         float64
	passMark        *float64
	cost            *record.Cost
}

// NewSheet is an empty sheet of n trials scored with cfg over suite s.
func NewSheet(cfg Config, s Suite, n int) *Sheet {
	sh := &Sheet{scorers: prepare(cfg.effective()), suite: s, tasks: make(map[string]*Task, len(s.Tasks)), ids: map[string]int32{}}
	for i := range s.Tasks {
		sh.tasks[s.Tasks[i].ID] = &s.Tasks[i]
	}
	sh.rows = make([]row, n)
	sh.values = make([]trialValue, n*len(sh.scorers))
	return sh
}

// intern is name's index in s.names.
func (s *Sheet) intern(name string) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.ids[name]
	if !ok {
		id = int32(len(s.names))
		s.ids[name] = id
		s.names = append(s.names, name)
	}
	return id
}

func (s *Sheet) name(id int32) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[id]
}

// Name sets trial i's names alone, before it has ended.
func (s *Sheet) Name(i int, candidate, task string, trial int) {
	s.rows[i] = row{candidate: s.intern(candidate), task: s.intern(task), trial: int32(trial)}
}

// Names are trial i's candidate, task and trial number.
func (s *Sheet) Names(i int) (candidate, task string, trial int) {
	r := &s.rows[i]
	return s.name(r.candidate), s.name(r.task), int(r.trial)
}

// Set keeps what scoring reads of trial i, r: its scorers' raw values are
// taken now.
func (s *Sheet) Set(i int, r *record.Trial) {
	s.rows[i] = rowOf(r)
	s.rows[i].candidate, s.rows[i].task = s.intern(r.CandidateID), s.intern(r.TaskID)
	task := s.tasks[r.TaskID]
	for j, sc := range s.scorers {
		s.values[i*len(s.scorers)+j] = sc.value(*r, task)
	}
}

// Trials are the sheet's trials in order, each a record.Trial with what
// the sheet keeps of it and its score (Outcome.Scores).
func (s *Sheet) Trials(scores []*float64) iter.Seq[*record.Trial] {
	return func(yield func(*record.Trial) bool) {
		for i := range s.rows {
			r := &s.rows[i]
			t := record.Trial{Result: runner.Result{CandidateID: s.name(r.candidate), TaskID: s.name(r.task), Trial: int(r.trial),
				Success: r.success, ErrorKind: r.kind, ErrorMessage: r.message, RuntimeSeconds: r.runtime},
				PassMark: r.passMark, Cost: r.cost, Score: scores[i]}
			if !yield(&t) {
				return
			}
		}
	}
}

// TrialScores lists the scored trials' scores, in order.
func (s *Sheet) TrialScores(scores []*float64) []record.TrialScore {
	var out []record.TrialScore
	for i, sc := range scores {
		if sc != nil {
			r := &s.rows[i]
			out = append(out, record.TrialScore{CandidateID: s.name(r.candidate), TaskID: s.name(r.task), Trial: int(r.trial), Score: *sc})
		}
	}
	return out
}

// rowOf is what a sheet keeps of r, but its names.
func rowOf(r *record.Trial) row {
	out := row{trial: int32(r.Trial), success: r.Success, kind: r.ErrorKind, runtime: r.RuntimeSeconds, passMark: r.PassMark, cost: r.Cost}
	if endedByNoFault(r.Success, r.ErrorKind) {
		out.message = r.ErrorMessage
	}
	return out
}

// value is scorer j's raw value of trial i.
func (s *Sheet) value(i, j int) trialValue { return s.values[i*len(s.scorers)+j] }
