package scoring

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

// Outcome is what Score makes of a run's results.
type Outcome struct {
	// Scores are the results' composite scores in input order (nil when not
	// scored); Apply sets them. Not a copy of the results: at 100,000 trials
	// that would be tens of megabytes for one field.
	Scores []*float64
	// Standings are in rank order, exact ties by id.
	Standings []record.Standing
	// Winner is nil when nobody succeeded or no candidate is clearly best.
	Winner *string
	// WinnerLine says so in words (docs/results.md).
	WinnerLine string
	// Comparison is the test of rank 1 against rank 2, if there are two.
	Comparison *record.Comparison
	// Incomplete lists the candidates none of whose trials ran to an end
	// they are answerable for; while there are any there is no winner.
	Incomplete []record.Unjudged
	// Tasks is a suite's per-task matrix, hardest first; HeadToHead compares
	// every pair of candidates task by task.
	Tasks      []record.TaskRow
	HeadToHead []record.HeadToHead
}

// valueState says what a scorer made of one trial.
type valueState int

const (
	// stateRaw: a raw value to normalise across candidates.
	stateRaw valueState = iota
	// stateFixed: a final score (on_failure), not normalised.
	stateFixed
	// stateNone: no value (a judge failed); scored without this scorer.
	stateNone
)

type trialValue struct {
	state valueState
	v     float64 // raw value (stateRaw) or final score (stateFixed)
	note  string  // why: judge error, missing metric
}

// prepared is a scorer ready to run.
type prepared struct {
	Scorer
	name   string
	weight float64
	norm   Normalization
	goal   Goal
	fail   float64
	checks []compiledCheck
}

// Score scores every trial with cfg, aggregates each candidate's trials, ranks
// the candidates and names the winner. A candidate without results still gets
// a standing. It is deterministic; exact ties are listed by id.
func Score(cfg Config, candidates []string, results []record.Trial) Outcome {
	return ScoreSuite(cfg, Suite{Candidates: candidates}, results)
}

// Apply sets each result's Score from o.
func (o Outcome) Apply(results []record.Trial) {
	for i := range results {
		results[i].Score = o.Scores[i]
	}
}

// ScoreSuite is Score for a suite's tasks: each trial is scored within its
// task, candidates rank by suite score and are compared task by task.
func ScoreSuite(cfg Config, s Suite, results []record.Trial) Outcome {
	sh := NewSheet(cfg, s, len(results))
	for i := range results {
		sh.Set(i, &results[i])
	}
	return sh.Outcome()
}

// Outcome scores the sheet's trials (ScoreSuite).
func (s *Sheet) Outcome() Outcome {
	v := s.normalized()
	out := Outcome{Scores: v.composites(s)}
	entries := tallies(s, v, out.Scores)
	// b cannot be told from a by their trials (a suite's: by their tasks).
	tied := func(a, b *tally) bool { return !compareMeans(a.sum, b.sum).clear }
	if tasks := s.suite.Tasks; len(tasks) > 0 {
		tied = func(a, b *tally) bool { return pairedTied(a, b, tasks) }
	}
	rankEntries(entries, tied)
	out.Standings = make([]record.Standing, len(entries))
	for i, e := range entries {
		out.Standings[i] = e.st
	}
	out.decide(entries, s.suite.Tasks)
	return out
}

// trialValues are each scorer's score and whether it was clamped, per
// trial: [scorer][trial].
type trialValues struct {
	scores  [][]float64
	clamped [][]bool
}

// normalized gives every trial each scorer's score, its raw value
// normalised within the trial's task.
func (s *Sheet) normalized() trialValues {
	byTask := map[int32][]int{}
	for i, r := range s.rows {
		byTask[r.task] = append(byTask[r.task], i)
	}
	v := trialValues{make([][]float64, len(s.scorers)), make([][]bool, len(s.scorers))}
	for j, sc := range s.scorers {
		v.scores[j] = make([]float64, len(s.rows))
		v.clamped[j] = make([]bool, len(s.rows))
		for _, idx := range byTask {
			vals := make([]trialValue, len(idx))
			for n, i := range idx {
				vals[n] = s.value(i, j)
			}
			if sc.Type == TypeRuntime {
				withinNoise(vals)
			}
			sco, cl := sc.normalize(vals)
			for n, i := range idx {
				v.scores[j][i], v.clamped[j][i] = sco[n], cl[n]
			}
		}
	}
	return v
}

// composites are the trials' composite scores: the weighted mean of
// their scorers' scores; nil for a trial not scored.
func (v trialValues) composites(s *Sheet) []*float64 {
	composite := make([]*float64, len(s.rows))
	for i, r := range s.rows {
		if endedByNoFault(r.success, r.kind) {
			continue
		}
		var sum, wsum float64
		for j, sc := range s.scorers {
			if s.value(i, j).state == stateNone || sc.weight == 0 {
				continue
			}
			sum += sc.weight * v.scores[j][i]
			wsum += sc.weight
		}
		if wsum > 0 {
			composite[i] = new(clamp01(sum / wsum))
		}
	}
	return composite
}

// tallies adds up each candidate's trials, every candidate of the suite
// included, and finishes their figures.
func tallies(s *Sheet, v trialValues, composite []*float64) []*tally {
	byID := map[string]*tally{}
	get := func(id string) *tally {
		t := byID[id]
		if t == nil {
			t = newTally(id, len(s.scorers))
			byID[id] = t
		}
		return t
	}
	for _, id := range s.suite.Candidates {
		get(id)
	}
	for i := range s.rows {
		get(s.name(s.rows[i].candidate)).add(s, i, composite[i], v)
	}
	entries := make([]*tally, 0, len(byID))
	for _, t := range byID {
		t.finish(s.scorers)
		if len(s.suite.Tasks) > 0 {
			t.suiteStats(s.suite.Tasks, max(s.suite.PassAtK, 1))
		}
		entries = append(entries, t)
	}
	return entries
}

// add counts the sheet's trial i, scored score.
func (t *tally) add(s *Sheet, i int, score *float64, v trialValues) {
	r := &s.rows[i]
	tt := t.task(s.name(r.task))
	if !t.count(r, tt) {
		return
	}
	if score != nil {
		t.scores = append(t.scores, *score)
		tt.scores = append(tt.scores, *score)
	}
	if passed(r.success, score, r.passMark) {
		tt.passes++
	}
	for j, sc := range s.scorers {
		val := s.value(i, j)
		if val.state != stateNone {
			t.perScorer[j] = append(t.perScorer[j], v.scores[j][i])
		}
		if sc.Type == TypeJudge && val.state == stateNone {
			t.judgeErrors++
		}
		if val.note != "" {
			t.notes[j] = append(t.notes[j], noteHit{trial: int(r.trial), msg: val.note})
		}
		if v.clamped[j][i] {
			t.clamped[j]++
		}
	}
}

// decide names the winner of the ranked entries, or says why there is
// none, and a suite's task matrix and head-to-head.
func (out *Outcome) decide(entries []*tally, tasks []Task) {
	if len(tasks) > 0 {
		out.Winner, out.WinnerLine, out.Comparison = decideSuite(entries, tasks)
		out.Incomplete = unjudgedTasks(entries, tasks)
		out.Tasks = taskRows(entries, tasks)
		out.HeadToHead = headToHead(entries, tasks)
	} else {
		out.Winner, out.WinnerLine, out.Comparison = decide(entries)
		out.Incomplete = unjudged(entries)
	}
	if len(out.Incomplete) > 0 {
		out.Winner, out.WinnerLine = nil, incompleteLine(out.Incomplete, len(tasks))
		return
	}
	unscored, first, unverified := setAside(entries)
	if unscored > 0 {
		out.WinnerLine += fmt.Sprintf("; %d %s not scored (%s)", unscored, text.Plural(unscored, "trial", "trials"), first)
	}
	if unverified > 0 {
		out.WinnerLine += fmt.Sprintf("; %d %s not verified (the task's verifier failed)", unverified, text.Plural(unverified, "trial", "trials"))
	}
	out.WinnerLine += costLine(entries)
}

func prepare(cfg Config) []prepared {
	out := make([]prepared, len(cfg.Scorers))
	for i, s := range cfg.Scorers {
		out[i] = prepared{
			Scorer: s,
			name:   s.EffectiveName(),
			weight: s.EffectiveWeight(),
			norm:   s.EffectiveNormalize(),
			goal:   s.EffectiveGoal(),
			fail:   s.EffectiveOnFailure(),
			checks: compileChecks(s.Checks),
		}
		if math.IsNaN(out[i].weight) || math.IsInf(out[i].weight, 0) || out[i].weight < 0 {
			out[i].weight = 0 // Validate rejects it; never poison the composite
		}
		out[i].fail = clamp01(out[i].fail) // NaN: 0
	}
	return out
}

// endedByNoFault reports whether r failed because the backend did (infra,
// auth) or the run was interrupted: such trials are not scored.
func endedByNoFault(success bool, kind runner.ErrorKind) bool {
	return !success && !kind.Scored()
}

// value is what the scorer makes of one trial before normalisation.
func (s prepared) value(r record.Trial, task *Task) trialValue {
	if endedByNoFault(r.Success, r.ErrorKind) {
		return trialValue{state: stateNone}
	}
	if s.Type == TypeVerifier {
		// The reward judges what the sandbox holds, whatever the
		// candidate's own end.
		if r.Reward == nil || math.IsNaN(*r.Reward) || math.IsInf(*r.Reward, 0) {
			return trialValue{state: stateFixed, v: s.fail, note: "no reward"}
		}
		return trialValue{v: *r.Reward}
	}
	if !r.Success {
		return trialValue{state: stateFixed, v: s.fail}
	}
	switch s.Type {
	case TypeSuccess:
		return trialValue{v: 1}
	case TypeRuntime:
		if math.IsNaN(r.RuntimeSeconds) || math.IsInf(r.RuntimeSeconds, 0) || r.RuntimeSeconds < 0 {
			return trialValue{state: stateNone, note: "no valid runtime"}
		}
		return trialValue{v: r.RuntimeSeconds}
	case TypeSubmitted:
		f, why := submittedNumber(r, s.Field)
		if why != "" {
			return trialValue{state: stateFixed, v: s.fail, note: why}
		}
		return trialValue{v: f}
	case TypeArtifact:
		f, note := checkFraction(s.name, s.checks, r, task)
		return trialValue{v: f, note: note}
	case TypeJudge:
		for _, j := range r.Judges {
			if j.Name != s.name {
				continue
			}
			switch {
			case j.Error != "":
				return trialValue{state: stateNone, note: j.Error}
			case j.Score == nil || math.IsNaN(*j.Score) || math.IsInf(*j.Score, 0):
				return trialValue{state: stateNone, note: "judge gave no score"}
			}
			return trialValue{v: *j.Score}
		}
		return trialValue{state: stateNone, note: "not judged"}
	}
	return trialValue{state: stateNone, note: "unknown scorer type " + string(s.Type)}
}

// submittedNumber reads a finite number from FORGE_RESULT, or says why not.
func submittedNumber(r record.Trial, field string) (float64, string) {
	v, ok := r.Submitted[field]
	if !ok {
		if r.SubmitError != "" {
			return 0, fmt.Sprintf("no %q submitted (%s)", field, r.SubmitError)
		}
		return 0, fmt.Sprintf("no %q submitted", field)
	}
	var f float64
	switch v := v.(type) {
	case float64:
		f = v
	case int:
		f = float64(v)
	case int64:
		f = float64(v)
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(v), 64); err != nil {
			return 0, fmt.Sprintf("submitted %q is not a finite number", field)
		}
	default:
		return 0, fmt.Sprintf("submitted %q is not a number", field)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Sprintf("submitted %q is not a finite number", field)
	}
	return f, ""
}

// Runtimes closer than their measuring noise do not rank candidates.
const (
	RuntimeNoise      = 0.05
	RuntimeResolution = 0.010 // seconds
)

// withinNoise groups runtimes from the fastest f up to f + max(f×RuntimeNoise,
// RuntimeResolution), each becoming f, so identical candidates tie however
// their clocks jittered.
func withinNoise(vals []trialValue) {
	pool := rawPool(vals)
	group := make(map[float64]float64, len(pool))
	var start float64
	for i, v := range pool {
		if i == 0 || v >= start+max(start*RuntimeNoise, RuntimeResolution) {
			start = v
		}
		group[v] = start
	}
	for i, v := range vals {
		if v.state == stateRaw {
			vals[i].v = group[v.v]
		}
	}
}

// rawPool is the stateRaw values of vals, sorted.
func rawPool(vals []trialValue) []float64 {
	var pool []float64
	for _, v := range vals {
		if v.state == stateRaw {
			pool = append(pool, v.v)
		}
	}
	sort.Float64s(pool)
	return pool
}

// normalize turns the stateRaw values into scores in [0, 1], reporting clamps.
func (s prepared) normalize(vals []trialValue) (scores []float64, clamped []bool) {
	scores = make([]float64, len(vals))
	clamped = make([]bool, len(vals))
	pool := rawPool(vals)
	minimize := s.goal == GoalMinimize
	for i, v := range vals {
		switch v.state {
		case stateFixed:
			scores[i] = v.v
			continue
		case stateNone:
			continue
		}
		switch s.norm {
		case NormMinMax:
			lo, hi := pool[0], pool[len(pool)-1]
			switch {
			case hi == lo:
				scores[i] = 1
			case minimize:
				scores[i] = (hi - v.v) / (hi - lo)
			default:
				scores[i] = (v.v - lo) / (hi - lo)
			}
		case NormRank:
			n := len(pool)
			if n == 1 {
				scores[i] = 1
				break
			}
			var better int
			if minimize {
				better = sort.SearchFloat64s(pool, v.v) // strictly smaller
			} else {
				better = n - sort.Search(n, func(k int) bool { return pool[k] > v.v })
			}
			scores[i] = 1 - float64(better)/float64(n-1)
		default: // raw
			x := v.v
			if x < 0 || x > 1 {
				clamped[i] = true
				x = clamp01(x)
			}
			if minimize {
				x = 1 - x
			}
			scores[i] = x
		}
		scores[i] = clamp01(scores[i])
	}
	return scores, clamped
}

func clamp01(x float64) float64 {
	switch {
	case math.IsNaN(x), x < 0:
		return 0
	case x > 1:
		return 1
	}
	return x
}
