package report

// One candidate's line in the standings: its figures and the text of its cells.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/forge-run/forge/internal/text"
	"github.com/forge-run/forge/record"
	"github.com/forge-run/forge/runner"
	"github.com/forge-run/forge/scoring"
)

// candidate is one candidate's line in the standings, with its trials.
type candidate struct {
	standing record.Standing
	// ranked is false when the record has no standing for the candidate;
	// standing is then scoring's Aggregate, without a rank.
	ranked  bool
	winner  bool
	results []*record.Trial // in trial order; the record's own
	scored  bool
	// artifactMean is the mean artifact size over the trials that wrote one.
	artifactMean float64
	artifacts    int
	errors       []kindCount
	// wrong counts the trials that ran to their end with a wrong answer.
	wrong int
	// multi: trials are told apart by number.
	multi     bool
	succeeded int
}

// kindCount is how many trials failed with one error kind.
type kindCount struct {
	kind  runner.ErrorKind
	count int
}

// candidates lists the standings' candidates, then those with results only.
func candidates(rec *record.Record) []candidate {
	order, byID := record.ByCandidate(rec.Results)
	out := make([]candidate, 0, len(order))
	seen := map[string]bool{}
	for _, st := range rec.Standings {
		if seen[st.CandidateID] {
			continue
		}
		seen[st.CandidateID] = true
		out = append(out, newCandidate(st, true, byID[st.CandidateID], rec.Winner))
	}
	for _, id := range order {
		if seen[id] {
			continue
		}
		out = append(out, newCandidate(scoring.Aggregate(id, byID[id]), false, byID[id], rec.Winner))
	}
	return out
}

func newCandidate(st record.Standing, ranked bool, rs []*record.Trial, winner *string) candidate {
	// rs is the candidate's own slice (candidates), of the record's results.
	byTrial := func(a, b *record.Trial) int { return cmp.Compare(a.Trial, b.Trial) }
	if !slices.IsSortedFunc(rs, byTrial) {
		slices.SortStableFunc(rs, byTrial)
	}
	c := candidate{standing: st, ranked: ranked, winner: winner != nil && *winner != "" && st.CandidateID == *winner, results: rs}
	c.standing.Trials = cmp.Or(c.standing.Trials, len(rs))
	c.scored = st.ScoredTrials > 0
	counts := map[runner.ErrorKind]int{}
	var artifactSum float64
	for _, r := range rs {
		if r.Score != nil {
			c.scored = true
		}
		if r.ArtifactBytes > 0 || r.ArtifactContent != "" {
			c.artifacts++
			artifactSum += float64(artifactSize(*r))
		}
		if !r.Success {
			counts[r.ErrorKind]++
		} else {
			c.succeeded++
		}
		if r.Wrong() {
			c.wrong++
		}
		c.multi = c.multi || r.Trial > 1
	}
	if c.artifacts > 0 {
		c.artifactMean = artifactSum / float64(c.artifacts)
	}
	for k, n := range counts {
		c.errors = append(c.errors, kindCount{k, n})
	}
	slices.SortFunc(c.errors, func(a, b kindCount) int {
		return cmp.Or(b.count-a.count, strings.Compare(KindLabel(a.kind), KindLabel(b.kind)))
	})
	return c
}

// artifactSize is the artifact's size on disk, else the size the record holds.
func artifactSize(r record.Trial) int64 {
	if r.ArtifactBytes > 0 {
		return r.ArtifactBytes
	}
	return int64(artifactHeld(&r))
}

// artifactHeld is how many bytes of the artifact the record holds.
func artifactHeld(r *record.Trial) int {
	if r.ArtifactEncoding == "base64" {
		return len(r.ArtifactContent) * 3 / 4
	}
	return len(r.ArtifactContent)
}

// kindLabels are the error kinds as the status says them.
var kindLabels = map[runner.ErrorKind]string{
	runner.ErrTimeout:         "timeout",
	runner.ErrCandidateFailed: "failed",
	runner.ErrNone:            "failed",
	runner.ErrArtifactMissing: "no artifact",
	runner.ErrInfra:           "infra error",
	runner.ErrAuth:            "auth error",
	runner.ErrCancelled:       "cancelled",
	runner.ErrVerifyFailed:    "not verified",
}

// KindLabel is an error kind as the status says it: "timeout", "infra error".
func KindLabel(k runner.ErrorKind) string { return cmp.Or(kindLabels[k], string(k)) }

// health classifies a candidate's trials for colour; it is the CSS class.
type health string

const (
	healthOK      health = "ok"      // every trial succeeded
	healthPartial health = "partial" // some trials failed, or answered wrong
	healthFailed  health = "failed"  // no trial succeeded
)

func (c candidate) health() health {
	switch {
	case len(c.errors) == 0 && c.wrong == 0:
		return healthOK
	case len(c.errors) > 0 && c.successes() == 0:
		return healthFailed
	}
	return healthPartial
}

func (c candidate) successes() int {
	if len(c.results) == 0 {
		return c.standing.Successes
	}
	return c.succeeded
}

func (c candidate) trials() int {
	if len(c.results) > 0 {
		return len(c.results)
	}
	return c.standing.Trials
}

// rankText is "1", "=2" for a shared rank, or "-" when unranked.
func (c candidate) rankText() string {
	switch {
	case !c.ranked || c.standing.Rank <= 0:
		return "-"
	case c.standing.Tied:
		return fmt.Sprintf("=%d", c.standing.Rank)
	default:
		return fmt.Sprint(c.standing.Rank)
	}
}

// statusText is "ok", a single trial's failure, or "timeout 1/5, failed 1/5".
func (c candidate) statusText() string {
	if len(c.errors) == 0 && c.wrong == 0 {
		if c.trials() == 0 {
			return "no trials"
		}
		return "ok"
	}
	n := c.trials()
	if n == 1 {
		if c.wrong > 0 {
			return "wrong"
		}
		return KindLabel(c.errors[0].kind)
	}
	var parts []string
	if c.wrong > 0 { // never "ok" for a wrong answer
		parts = append(parts, fmt.Sprintf("wrong %d/%d", c.wrong, n))
	}
	for _, e := range c.errors {
		parts = append(parts, fmt.Sprintf("%s %d/%d", KindLabel(e.kind), e.count, n))
	}
	return strings.Join(parts, ", ")
}

// scoreText is the score as the winner line writes it, or "—" if unscored.
func (c candidate) scoreText() string {
	if !c.scored && c.standing.Score == 0 {
		return "—"
	}
	return c.standing.ScoreText()
}

// judged is how many trials count towards the success rate, as scoring counts.
func (c candidate) judged() int {
	if len(c.results) == 0 {
		return c.standing.Trials
	}
	n := 0
	for _, r := range c.results {
		if r.Success || r.ErrorKind.Scored() {
			n++
		}
	}
	return n
}

// successText is "80% (4/5)" over the trials that ran to an end.
func (c candidate) successText() string {
	n := c.judged()
	if n == 0 {
		return "—"
	}
	k := c.successes()
	return fmt.Sprintf("%s (%d/%d)", text.Percent(float64(k)/float64(n)), k, n)
}

// runtime is the mean runtime and its standard deviation over the successful
// trials, or over every trial when none succeeded: how long a candidate ran
// before failing is worth seeing too. n is how many trials they cover.
func (c candidate) runtime() (mean, sd float64, n int) {
	if c.successes() > 0 || len(c.results) == 0 {
		return c.standing.RuntimeMeanSeconds, c.standing.RuntimeStddevSeconds, c.successes()
	}
	xs := make([]float64, len(c.results))
	for i, r := range c.results {
		xs[i] = r.RuntimeSeconds
	}
	sum := scoring.Summarize(xs)
	return sum.Mean, sum.SD, len(xs)
}

// runtimeText is the mean runtime, ± its deviation over several trials.
func (c candidate) runtimeText() string {
	mean, sd, n := c.runtime()
	switch {
	case c.trials() == 0:
		return "—"
	case n <= 1:
		return text.Seconds(mean)
	}
	return text.SecondsPM(mean, sd)
}

// artifactText is the mean artifact size, or "—" when no trial wrote one.
func (c candidate) artifactText() string {
	if c.artifacts == 0 {
		return "—"
	}
	return text.Bytes(c.artifactMean)
}

// notes is the first failure's message on one line, naming the trial when
// there are several, or the first thing worth knowing about a successful one.
func (c candidate) notes() string {
	prefix := func(r *record.Trial) string {
		if name := runner.TrialName("", r.TaskID, r.Trial, c.multi); name != "" {
			return name + ": "
		}
		return ""
	}
	// Tampering first: the trial's reward stood on tools it changed.
	for _, r := range c.results {
		if len(r.Tampered) > 0 {
			return prefix(r) + "tampered: " + text.OneLine(strings.Join(r.Tampered, ", "))
		}
	}
	for _, r := range c.results {
		if !r.Success { // the first failure
			return prefix(r) + cmp.Or(text.OneLine(r.ErrorMessage), KindLabel(r.ErrorKind))
		}
	}
	for _, r := range c.results {
		if r.Wrong() {
			return prefix(r) + "wrong: " + WrongText(r)
		}
	}
	for _, n := range c.standing.Notes {
		if n = text.OneLine(n); n != "" {
			return n
		}
	}
	for _, r := range c.results {
		for _, j := range r.Judges {
			if j.Error != "" {
				return prefix(r) + "judge " + text.OneLine(j.Name) + ": " + text.OneLine(j.Error)
			}
		}
		if r.SubmitError != "" {
			return prefix(r) + "result file ignored: " + text.OneLine(r.SubmitError)
		}
		if r.ArtifactTruncated {
			return prefix(r) + "artifact truncated"
		}
		if r.OutputTruncated {
			return prefix(r) + "output truncated"
		}
	}
	return ""
}

// costText is "$1.20 ($0.040/solved)" (or "/success"), "unpriced" when it has
// tokens but no price, "+unpriced" when part of it had none.
func (c candidate) costText() string {
	k := c.standing.Cost
	switch {
	case k == nil:
		return "—"
	case k.Unpriced():
		return "unpriced"
	}
	s := totalText(k)
	switch {
	case k.PerSolvedUSD != nil:
		s += " (" + text.USD(*k.PerSolvedUSD) + "/solved)"
	case c.standing.Suite == nil && k.PerSuccessUSD != nil:
		s += " (" + text.USD(*k.PerSuccessUSD) + "/success)"
	}
	return s
}

// costLine is the candidate's cost in a sentence ("cost $0.11: $0.014 a
// trial, 30200 tokens, ..."); "" without a cost.
func (c candidate) costLine() string {
	k := c.standing.Cost
	switch {
	case k == nil:
		return ""
	case k.Unpriced():
		return fmt.Sprintf("%d tokens, unpriced", k.Tokens)
	}
	s := fmt.Sprintf("cost %s: %s a trial, %d tokens", text.USD(k.USD), text.USD(k.MeanUSD), k.Tokens)
	if k.PerSuccessUSD != nil {
		s += ", " + text.USD(*k.PerSuccessUSD) + " per success"
	}
	if k.PerSolvedUSD != nil {
		s += ", " + text.USD(*k.PerSolvedUSD) + " per solved task"
	}
	if k.UnpricedTrials > 0 {
		s += fmt.Sprintf("; %d %s had something unpriced", k.UnpricedTrials, text.Plural(k.UnpricedTrials, "trial", "trials"))
	}
	return s
}

// solvedText is "28/30": tasks solved in every trial over tasks played.
func (c candidate) solvedText(tasks int) string {
	if c.standing.Suite == nil {
		return "—"
	}
	return fmt.Sprintf("%d/%d", c.standing.Suite.Solved, tasks)
}

// passText is the candidate's pass@k, or "—" when no task had k trials.
func (c candidate) passText() string {
	if c.standing.Suite == nil || c.standing.Suite.PassAtK == nil {
		return "—"
	}
	return text.Score(*c.standing.Suite.PassAtK)
}

// totalText is "$1.20", "$1.20+unpriced" or "unpriced".
func totalText(k *record.CostStanding) string {
	if k.Unpriced() {
		return "unpriced"
	}
	s := text.USD(k.USD)
	if k.UnpricedTrials > 0 {
		s += "+unpriced"
	}
	return s
}
