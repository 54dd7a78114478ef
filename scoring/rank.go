package scoring

// Aggregation and ranking, ties kept as ties.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
)

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
	unverified        []noteHit // verify_failed: the task could not judge
	cost              costTally
	tasks             map[string]*taskTally

	sum summary
	st  record.Standing
}

// task is the candidate's tally of task id.
func (t *tally) task(id string) *taskTally {
	tt := t.tasks[id]
	if tt == nil {
		tt = &taskTally{}
		t.tasks[id] = tt
	}
	return tt
}

// newTally is an empty tally for a candidate scored by n scorers.
func newTally(id string, n int) *tally {
	return &tally{id: id, perScorer: make([][]float64, n), notes: make([][]noteHit, n), clamped: make([]int, n),
		tasks: map[string]*taskTally{}}
}

// count adds trial r to the candidate's counts and its task's, tt, and
// reports whether it is to be scored: a trial that ended by no fault of the
// candidate is set aside.
func (t *tally) count(r *row, tt *taskTally) (scored bool) {
	t.trials++
	tt.trials++
	t.cost.add(r.cost)
	if r.success {
		t.successes++
		tt.successes++
		if !math.IsNaN(r.runtime) && !math.IsInf(r.runtime, 0) {
			t.runtimes = append(t.runtimes, r.runtime)
		}
	} else {
		if t.errors == nil {
			t.errors = map[string]int{}
		}
		t.errors[cmp.Or(string(r.kind), "unknown")]++
	}
	if endedByNoFault(r.success, r.kind) {
		hit := noteHit{trial: int(r.trial), msg: string(r.kind) + ": " + cmp.Or(r.message, "no message")}
		if r.kind.Fault() == runner.FaultTask {
			// Played to its end: set aside, but nothing to play again.
			t.unverified = append(t.unverified, hit)
			tt.unverified++
		} else {
			t.unscored = append(t.unscored, hit)
			tt.unscored = append(tt.unscored, hit)
		}
		return false
	}
	return true
}

// Aggregate is one candidate's standing, without a rank, from results scored
// already: for a record that has results but no standings.
func Aggregate(id string, results []*record.Trial) record.Standing {
	t := newTally(id, 0)
	for _, r := range results {
		kept := rowOf(r)
		if t.count(&kept, t.task(r.TaskID)) && r.Score != nil {
			t.scores = append(t.scores, *r.Score)
		}
	}
	t.finish(nil)
	return t.st
}

func (t *tally) finish(scorers []prepared) {
	t.sum = summarize(t.scores)
	rt := summarize(t.runtimes)
	if math.IsInf(rt.sd, 0) || math.IsInf(rt.mean, 0) { // absurd runtimes overflow; keep the JSON valid
		rt = summary{}
	}
	st := record.Standing{
		CandidateID:          t.id,
		Score:                clamp01(t.sum.mean),
		ScoreStddev:          t.sum.sd,
		ScoreCI95:            scoreCI95(t.sum),
		Successes:            t.successes,
		SuccessCI95:          wilson95(t.successes, t.ran()),
		RuntimeMeanSeconds:   rt.mean,
		RuntimeStddevSeconds: rt.sd,
		RuntimeMedianSeconds: median(t.runtimes),
		Trials:               t.trials,
		ScoredTrials:         t.sum.n,
		Errors:               t.errors,
		JudgeErrors:          t.judgeErrors,
		Unverified:           len(t.unverified),
	}
	if ran := t.ran(); ran > 0 {
		st.SuccessRate = float64(t.successes) / float64(ran)
	}
	st.Cost = t.cost.standing(t.successes)
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
	if len(t.unverified) > 0 {
		first := firstHit(t.unverified)
		st.Notes = append(st.Notes, fmt.Sprintf("%d of %d trials not scored: their task's verifier gave no reward (trial %d: %s)",
			len(t.unverified), t.trials, first.trial, first.msg))
	}
	if t.trials == 0 {
		st.Notes = append(st.Notes, "no results")
	} else if t.sum.n == 0 {
		st.Notes = append(st.Notes, "no trial could be scored")
	}
	t.st = st
}

// noteFor summarises one scorer's problems, quoting the lowest-numbered trial's.
func noteFor(s prepared, hits []noteHit, trials int) string {
	if len(hits) == 0 {
		return ""
	}
	what := "scored without it"
	switch s.Type {
	case TypeJudge:
		what = "not judged, scored without it"
	case TypeSubmitted:
		what = "scored " + strconv.FormatFloat(s.fail, 'g', 4, 64) + " for a missing metric"
	}
	first := firstHit(hits)
	return fmt.Sprintf("%s: %d of %d trials %s (trial %d: %s)", s.name, len(hits), trials, what, first.trial, first.msg)
}

// firstHit is the lowest-numbered trial's hit, whatever the results' order.
func firstHit(hits []noteHit) noteHit {
	return slices.MinFunc(hits, func(a, b noteHit) int { return cmp.Or(cmp.Compare(a.trial, b.trial), strings.Compare(a.msg, b.msg)) })
}

// rankEntries sorts the candidates and ranks them: by mean score (ties by id),
// those without results last and tied. A candidate that cannot be told from
// the best of the group above it shares that group's rank.
func rankEntries(es []*tally, tied func(a, b *tally) bool) {
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
		for j < len(es) && (es[i].trials > 0) == (es[j].trials > 0) && (es[i].trials == 0 || tied(es[i], es[j])) {
			j++
		}
		for k := i; k < j; k++ {
			es[k].st.Rank = i + 1
			es[k].st.Tied = j-i > 1
		}
		i = j
	}
}

// unjudged lists the candidates without a trial they are answerable for.
func unjudged(es []*tally) []record.Unjudged {
	var out []record.Unjudged
	for _, e := range es {
		if e.trials > len(e.unscored) {
			continue // verify_failed trials ended: the candidate is judged
		}
		reason := "no results"
		if len(e.unscored) > 0 {
			reason = text.Shorten(text.OneLine(firstHit(e.unscored).msg), 100)
		}
		out = append(out, record.Unjudged{CandidateID: e.id, Reason: reason})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CandidateID < out[j].CandidateID })
	return out
}

// ran counts the trials that say something about the candidate.
func (t *tally) ran() int { return t.trials - len(t.unscored) - len(t.unverified) }

// setAside counts the trials not scored: those ended by no fault of their
// candidate, saying how the first ended, and those whose task's verifier
// failed.
func setAside(es []*tally) (unscored int, first string, unverified int) {
	var hit noteHit
	firstID := ""
	for _, e := range es {
		unverified += len(e.unverified)
		if len(e.unscored) == 0 {
			continue
		}
		unscored += len(e.unscored)
		if h := firstHit(e.unscored); firstID == "" || e.id < firstID {
			hit, firstID = h, e.id
		}
	}
	if unscored > 0 {
		first = fmt.Sprintf("%s trial %d: %s", firstID, hit.trial, text.Shorten(text.OneLine(hit.msg), 100))
	}
	return unscored, first, unverified
}
