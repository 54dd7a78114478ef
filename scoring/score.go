package scoring

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/runner"
)

// Outcome is what Score makes of a run's results.
type Outcome struct {
	// Results are copies of the input results, in the input order, with
	// Score set (nil only when no weighted scorer had a value for the trial).
	Results []runner.Result
	// Standings are in rank order; candidates that tie exactly on display
	// are ordered by id.
	Standings []Standing
	// Winner is nil when nobody succeeded or no candidate is clearly best.
	Winner *string
	// WinnerLine says so in words, e.g.
	// "winner: beta (0.81 ± 0.04), 1.24× alpha, p = 0.003".
	WinnerLine string
	// Comparison is the test of rank 1 against rank 2; nil with fewer than
	// two candidates that have results.
	Comparison *Comparison
	// Incomplete lists the candidates the run could not judge: none of
	// their trials ran to an end the candidate is answerable for (they hit
	// infrastructure or auth errors, were cancelled, or have no results).
	// While it is not empty there is no winner.
	Incomplete []Unjudged
}

// Unjudged is a candidate none of whose trials says anything about it.
type Unjudged struct {
	CandidateID string `json:"candidate_id"`
	// Reason is how its first unscored trial ended ("infra: Total CPU
	// limit exceeded…", "cancelled: …"), or "no results".
	Reason string `json:"reason"`
}

// valueState says what a scorer made of one trial.
type valueState int

const (
	// stateRaw: a raw value to normalise across candidates.
	stateRaw valueState = iota
	// stateFixed: a final score (on_failure) that takes no part in
	// normalisation.
	stateFixed
	// stateNone: no value (a judge failed); the trial is scored without
	// this scorer.
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

// Score scores every trial with cfg (the zero Config means DefaultConfig),
// aggregates the trials of each candidate, ranks the candidates and names
// the winner. candidates is the manifest's list: a candidate without results
// still gets a standing (after every candidate that has results); results of
// candidates not in the list are scored too. Score is deterministic and does
// not depend on the order of candidates or results, except that candidates
// whose scores tie exactly are listed by id.
func Score(cfg Config, candidates []string, results []runner.Result) Outcome {
	scorers := prepare(cfg.effective())

	// Raw values, then scores, per scorer and trial.
	values := make([][]trialValue, len(scorers))
	scores := make([][]float64, len(scorers))
	clamped := make([][]bool, len(scorers))
	for j, s := range scorers {
		values[j] = make([]trialValue, len(results))
		for i, r := range results {
			values[j][i] = s.value(r)
		}
		if s.Type == TypeRuntime {
			withinNoise(values[j])
		}
		scores[j], clamped[j] = s.normalize(values[j])
	}

	out := Outcome{Results: make([]runner.Result, len(results))}
	composite := make([]*float64, len(results))
	for i, r := range results {
		if notTheCandidates(r) {
			out.Results[i] = r
			out.Results[i].Score = nil
			continue
		}
		var sum, wsum float64
		for j, s := range scorers {
			if values[j][i].state == stateNone || s.weight == 0 {
				continue
			}
			sum += s.weight * scores[j][i]
			wsum += s.weight
		}
		if wsum > 0 {
			c := clamp01(sum / wsum)
			composite[i] = &c
		}
		r.Score = composite[i]
		out.Results[i] = r
	}

	// Per candidate.
	byID := map[string]*tally{}
	get := func(id string) *tally {
		t := byID[id]
		if t == nil {
			t = &tally{id: id, perScorer: make([][]float64, len(scorers)),
				notes: make([][]noteHit, len(scorers)), clamped: make([]int, len(scorers))}
			byID[id] = t
		}
		return t
	}
	for _, id := range candidates {
		get(id)
	}
	for i, r := range results {
		t := get(r.CandidateID)
		t.trials++
		if r.Success {
			t.successes++
			if !math.IsNaN(r.RuntimeSeconds) && !math.IsInf(r.RuntimeSeconds, 0) {
				t.runtimes = append(t.runtimes, r.RuntimeSeconds)
			}
		} else {
			kind := string(r.ErrorKind)
			if kind == "" {
				kind = "unknown"
			}
			if t.errors == nil {
				t.errors = map[string]int{}
			}
			t.errors[kind]++
		}
		if notTheCandidates(r) {
			t.unscored = append(t.unscored, noteHit{trial: r.Trial, msg: string(r.ErrorKind) + ": " + orDefault(r.ErrorMessage, "no message")})
			continue
		}
		if composite[i] != nil {
			t.scores = append(t.scores, *composite[i])
		}
		for j, s := range scorers {
			v := values[j][i]
			if v.state != stateNone {
				t.perScorer[j] = append(t.perScorer[j], scores[j][i])
			}
			if s.Type == TypeJudge && v.state == stateNone {
				t.judgeErrors++
			}
			if v.note != "" {
				t.notes[j] = append(t.notes[j], noteHit{trial: r.Trial, msg: v.note})
			}
			if clamped[j][i] {
				t.clamped[j]++
			}
		}
	}

	entries := make([]*tally, 0, len(byID))
	for _, t := range byID {
		t.finish(scorers)
		entries = append(entries, t)
	}
	rankEntries(entries)
	out.Standings = make([]Standing, len(entries))
	for i, e := range entries {
		out.Standings[i] = e.st
	}
	out.Winner, out.WinnerLine, out.Comparison = decide(entries)
	out.Incomplete = unjudged(entries)
	if len(out.Incomplete) > 0 {
		out.Winner, out.WinnerLine = nil, incompleteLine(out.Incomplete)
	} else if n, first := unscoredTrials(entries); n > 0 {
		out.WinnerLine += fmt.Sprintf("; %d %s not scored (%s)", n, plural(n, "trial", "trials"), first)
	}
	return out
}

// unjudged lists, by id, the candidates without a trial that ran to an end
// the candidate is answerable for.
func unjudged(es []*tally) []Unjudged {
	var out []Unjudged
	for _, e := range es {
		if e.trials > len(e.unscored) {
			continue
		}
		reason := "no results"
		if len(e.unscored) > 0 {
			reason = text.Shorten(text.OneLine(firstHit(e.unscored).msg), 100)
		}
		out = append(out, Unjudged{CandidateID: e.id, Reason: reason})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CandidateID < out[j].CandidateID })
	return out
}

// incompleteLine is the winner line of a run that could not judge every
// candidate: "incomplete: c3 and c4 did not run (infra: …)", candidates
// with the same reason together.
func incompleteLine(us []Unjudged) string {
	var reasons []string
	byReason := map[string][]string{}
	for _, u := range us {
		if _, ok := byReason[u.Reason]; !ok {
			reasons = append(reasons, u.Reason)
		}
		byReason[u.Reason] = append(byReason[u.Reason], u.CandidateID)
	}
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		ids := byReason[r]
		parts[i] = fmt.Sprintf("%s did not run (%s)", andList(ids), r)
	}
	return "incomplete: " + strings.Join(parts, "; ")
}

// unscoredTrials counts the trials that ended by no fault of their
// candidate and says how the first one (by candidate, then trial) ended.
func unscoredTrials(es []*tally) (int, string) {
	n, first, firstID := 0, noteHit{}, ""
	for _, e := range es {
		if len(e.unscored) == 0 {
			continue
		}
		n += len(e.unscored)
		if h := firstHit(e.unscored); firstID == "" || e.id < firstID {
			first, firstID = h, e.id
		}
	}
	if n == 0 {
		return 0, ""
	}
	return n, fmt.Sprintf("%s trial %d: %s", firstID, first.trial, text.Shorten(text.OneLine(first.msg), 100))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
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
		if math.IsNaN(out[i].fail) {
			out[i].fail = 0
		}
		out[i].fail = clamp01(out[i].fail)
	}
	return out
}

// notTheCandidates reports whether r failed for reasons that say nothing
// about the candidate: the backend failed (infra, auth) or the run was
// interrupted (cancelled). Such trials are not scored.
func notTheCandidates(r runner.Result) bool {
	return !r.Success && !r.ErrorKind.Scored()
}

// value is what the scorer makes of one trial before normalisation.
func (s prepared) value(r runner.Result) trialValue {
	if notTheCandidates(r) {
		return trialValue{state: stateNone}
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
		return trialValue{v: checkFraction(s.checks, r)}
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

// submittedNumber reads a finite number from the candidate's FORGE_RESULT
// object, or says why it cannot.
func submittedNumber(r runner.Result, field string) (float64, string) {
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

// Runtimes closer than the noise of measuring them do not rank
// candidates (as Criterion's noise threshold): a runtime within
// RuntimeNoise (and at least RuntimeResolution) of a faster one counts as
// that one.
const (
	RuntimeNoise      = 0.05
	RuntimeResolution = 0.010 // seconds
)

// withinNoise groups runtimes from the fastest up: a group starts at its
// fastest runtime f and takes every runtime below f + max(f×RuntimeNoise,
// RuntimeResolution); each runtime becomes its group's f. Identical
// candidates thus tie however their clocks jittered, while runtimes that
// differ by more than the noise keep their measured values.
func withinNoise(vals []trialValue) {
	var pool []float64
	for _, v := range vals {
		if v.state == stateRaw {
			pool = append(pool, v.v)
		}
	}
	sort.Float64s(pool)
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

// normalize turns the scorer's trial values into scores in [0, 1]; only
// stateRaw values take part. It also reports which raw values were clamped.
func (s prepared) normalize(vals []trialValue) (scores []float64, clamped []bool) {
	scores = make([]float64, len(vals))
	clamped = make([]bool, len(vals))
	var pool []float64
	for _, v := range vals {
		if v.state == stateRaw {
			pool = append(pool, v.v)
		}
	}
	sort.Float64s(pool)
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
	case math.IsNaN(x):
		return 0
	case x < 0:
		return 0
	case x > 1:
		return 1
	}
	return x
}

// noteHit is one trial's reason for a note.
type noteHit struct {
	trial int
	msg   string
}

// tally gathers one candidate's trials.
type tally struct {
	id                string
	trials, successes int
	scores            []float64
	runtimes          []float64
	errors            map[string]int
	perScorer         [][]float64
	notes             [][]noteHit
	clamped           []int
	judgeErrors       int
	unscored          []noteHit // infra, auth, cancelled

	sum summary
	st  Standing
}

func (t *tally) finish(scorers []prepared) {
	t.sum = summarize(t.scores)
	rt := summarize(t.runtimes)
	if math.IsInf(rt.sd, 0) || math.IsInf(rt.mean, 0) { // absurd runtimes overflow; keep the JSON valid
		rt = summary{}
	}
	st := Standing{
		CandidateID:          t.id,
		Score:                clamp01(t.sum.mean),
		ScoreStddev:          t.sum.sd,
		ScoreCI95:            meanCI95(t.sum),
		Successes:            t.successes,
		SuccessCI95:          wilson95(t.successes, t.trials-len(t.unscored)),
		RuntimeMeanSeconds:   rt.mean,
		RuntimeStddevSeconds: rt.sd,
		RuntimeMedianSeconds: median(t.runtimes),
		Trials:               t.trials,
		ScoredTrials:         t.sum.n,
		Errors:               t.errors,
		JudgeErrors:          t.judgeErrors,
	}
	if ran := t.trials - len(t.unscored); ran > 0 {
		st.SuccessRate = float64(t.successes) / float64(ran)
	}
	for j, s := range scorers {
		if len(t.perScorer[j]) > 0 {
			if st.Breakdown == nil {
				st.Breakdown = map[string]float64{}
			}
			st.Breakdown[s.name] = summarize(t.perScorer[j]).mean
		}
		if n := noteFor(s, t.notes[j], t.trials); n != "" {
			st.Notes = append(st.Notes, n)
		}
		if n := t.clamped[j]; n > 0 {
			st.Notes = append(st.Notes, fmt.Sprintf("%s: %d of %d trials had raw values outside [0, 1], clamped",
				s.name, n, t.trials))
		}
	}
	if len(t.unscored) > 0 {
		first := firstHit(t.unscored)
		st.Notes = append(st.Notes, fmt.Sprintf("%d of %d trials not scored: they ended by no fault of the candidate (trial %d: %s)",
			len(t.unscored), t.trials, first.trial, first.msg))
	}
	if t.trials == 0 {
		st.Notes = append(st.Notes, "no results")
	} else if t.sum.n == 0 {
		st.Notes = append(st.Notes, "no trial could be scored")
	}
	t.st = st
}

// noteFor summarises one scorer's problems with a candidate's trials,
// quoting the problem of the lowest-numbered trial.
func noteFor(s prepared, hits []noteHit, trials int) string {
	if len(hits) == 0 {
		return ""
	}
	first := firstHit(hits)
	switch s.Type {
	case TypeJudge:
		return fmt.Sprintf("%s: %d of %d trials not judged, scored without it (trial %d: %s)",
			s.name, len(hits), trials, first.trial, first.msg)
	case TypeSubmitted:
		return fmt.Sprintf("%s: %d of %d trials scored %s for a missing metric (trial %d: %s)",
			s.name, len(hits), trials, trimFloat(s.fail), first.trial, first.msg)
	}
	return fmt.Sprintf("%s: %d of %d trials scored without it (trial %d: %s)",
		s.name, len(hits), trials, first.trial, first.msg)
}

// firstHit is the hit of the lowest-numbered trial (then the least message),
// whatever the order of the results.
func firstHit(hits []noteHit) noteHit {
	first := hits[0]
	for _, h := range hits {
		if h.trial < first.trial || (h.trial == first.trial && h.msg < first.msg) {
			first = h
		}
	}
	return first
}

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'g', 4, 64) }

// rankEntries sorts the candidates and gives them ranks, ties kept as ties.
// Candidates with results come first, by mean score (descending; scores
// within 1e-9 display by id), then those without results. A candidate
// shares the rank of the group above it when it cannot be told apart from
// that group's best (see compareMeans); candidates without results tie with
// each other.
func rankEntries(es []*tally) {
	key := func(t *tally) float64 { return math.Round(t.sum.mean / tieEpsilon) }
	sort.Slice(es, func(a, b int) bool {
		x, y := es[a], es[b]
		if (x.trials > 0) != (y.trials > 0) {
			return x.trials > 0
		}
		if kx, ky := key(x), key(y); kx != ky {
			return kx > ky
		}
		return x.id < y.id
	})
	for i := 0; i < len(es); {
		j := i + 1
		for j < len(es) && tied(es[i], es[j]) {
			j++
		}
		for k := i; k < j; k++ {
			es[k].st.Rank = i + 1
			es[k].st.Tied = j-i > 1
		}
		i = j
	}
}

func tied(a, b *tally) bool {
	if (a.trials > 0) != (b.trials > 0) {
		return false
	}
	if a.trials == 0 {
		return true
	}
	return !compareMeans(a.sum, b.sum).clear
}

// decide names the winner, if any, and says why.
func decide(es []*tally) (*string, string, *Comparison) {
	var withResults []*tally
	anySuccess := false
	for _, e := range es {
		if e.trials > 0 {
			withResults = append(withResults, e)
		}
		if e.successes > 0 {
			anySuccess = true
		}
	}
	if len(withResults) == 0 {
		return nil, "no winner: no results", nil
	}
	if !anySuccess {
		return nil, "no winner: no candidate succeeded", nil
	}
	top := withResults[0]
	var cmp *Comparison
	if len(withResults) > 1 {
		cmp = comparison(top, withResults[1])
	}
	if top.successes == 0 {
		return nil, fmt.Sprintf("no winner: %s ranks first but never succeeded", top.id), cmp
	}
	if cmp == nil {
		line := fmt.Sprintf("winner: %s %s, the only candidate", top.id, scoreText(top.st))
		if top.sum.n < 2 {
			line += singleTrial
		}
		return &top.id, line, nil
	}
	if top.st.Tied {
		var names []string
		for _, e := range withResults {
			if e.st.Rank == 1 {
				names = append(names, e.id)
			}
		}
		second := withResults[1]
		if cmp.Method == "exact" {
			return nil, fmt.Sprintf("no clear winner: %s tie at %.2f%s", andList(names), top.st.Score, singleTrial), cmp
		}
		return nil, fmt.Sprintf("no clear winner: %s overlap (%s vs %s, %s)", andList(names),
			pm(top.st), pm(second.st), pText(cmp.PValue)), cmp
	}
	line := fmt.Sprintf("winner: %s %s, ", top.id, scoreText(top.st))
	if cmp.Ratio > 0 {
		line += fmt.Sprintf("%.2f× %s", cmp.Ratio, cmp.Second)
	} else {
		line += fmt.Sprintf("over %s (%.2f)", cmp.Second, cmp.SecondScore)
	}
	if cmp.PValue != nil {
		line += ", " + pText(cmp.PValue)
	} else {
		line += singleTrial
	}
	return &top.id, line, cmp
}

const singleTrial = " (single trial; use --trials N for confidence)"

func comparison(best, second *tally) *Comparison {
	r := compareMeans(best.sum, second.sum)
	c := &Comparison{
		Best:           best.id,
		Second:         second.id,
		Method:         r.method,
		BestScore:      best.st.Score,
		SecondScore:    second.st.Score,
		Difference:     r.diff,
		DifferenceCI95: r.diffCI,
		PValue:         r.p,
		Alpha:          Alpha,
		Clear:          r.clear,
		DF:             r.df,
	}
	if r.t != nil && !math.IsInf(*r.t, 0) && !math.IsNaN(*r.t) {
		c.T = r.t
	}
	if second.st.Score > 0 {
		c.Ratio = best.st.Score / second.st.Score
	}
	return c
}

// scoreText is "(0.81 ± 0.04)" with an interval, "(0.81)" without.
func scoreText(st Standing) string { return "(" + pm(st) + ")" }

func pm(st Standing) string {
	if st.ScoredTrials < 2 {
		return fmt.Sprintf("%.2f", st.Score)
	}
	// As many decimals as the half-width needs for one significant digit
	// (two to four), so a tight interval does not read "± 0.00".
	hw := (st.ScoreCI95[1] - st.ScoreCI95[0]) / 2
	d := 2
	if hw > 0 && !math.IsInf(hw, 0) {
		d = max(2, min(4, int(-math.Floor(math.Log10(hw)))))
	}
	return fmt.Sprintf("%.*f ± %.*f", d, st.Score, d, hw)
}

// pText formats a p-value: "p < 0.001", "p = 0.003", "p = 0.31".
func pText(p *float64) string {
	switch {
	case p == nil:
		return "no test"
	case *p < 0.001:
		return "p < 0.001"
	}
	s := strconv.FormatFloat(*p, 'g', 2, 64)
	if f, _ := strconv.ParseFloat(s, 64); (f >= Alpha) != (*p >= Alpha) {
		s = strconv.FormatFloat(*p, 'g', 4, 64) // don't round across the threshold
	}
	return "p = " + s
}

func andList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
