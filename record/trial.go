package record

import (
	"slices"
	"strconv"

	"github.com/forge-run/forge/runner"
)

// Trial is one trial as the record keeps it (docs/results.md): what its
// sandbox gave back, and what forge added once the job had ended: its
// checks and judges, its score, cost and attempts. Its JSON is one object,
// in the order records have always had (MarshalJSON).
type Trial struct {
	runner.Result

	// Checks were made on the whole artifact as the job finished.
	Checks []CheckResult `json:"checks,omitempty" after:"artifact_cut"`
	// SecretInArtifact: the artifact, stored as written, holds a secret's
	// value (everything else forge writes masks it); forge warns.
	SecretInArtifact bool `json:"secret_in_artifact,omitempty"`
	// Cost is set when there is a price.
	Cost *Cost `json:"cost,omitempty" after:"resources"`

	// Attempts is how many sandboxes the trial took (retries after infra
	// errors; 0 in old records means 1); AttemptErrors say how the
	// earlier ones ended. Result is the last attempt's.
	Attempts int `json:"attempts,omitempty" after:"error_kind"`
	// Environment is the hash of the environment the trial ran in.
	Environment   string         `json:"environment,omitempty"`
	AttemptErrors []AttemptError `json:"attempt_errors,omitempty"`

	Judges []JudgeResult `json:"judges,omitempty"`
	// PassMark is the task's pass mark, when not 1: the score (and
	// reward) at which the trial solves its task.
	PassMark *float64 `json:"pass_mark,omitempty" after:"metrics"`
	Score    *float64 `json:"score" after:"verifier_log_bytes"`
}

// JudgeResult is what one judge scorer said of one trial's artifact.
type JudgeResult struct {
	Name   string   `json:"name"`
	Score  *float64 `json:"score"`
	Reason string   `json:"reason,omitempty"`
	// Error is set when the judge itself failed: reported, never scored 0.
	Error string `json:"error,omitempty"`
}

// CheckResult is how a trial fared on one artifact scorer's checks.
type CheckResult struct {
	// Name is the scorer's name.
	Name   string `json:"name"`
	Passed int    `json:"passed"`
	Of     int    `json:"of"`
	// Note is the first reason a check could not be made.
	Note string `json:"note,omitempty"`
	// Failed are the first checks that failed: what each wanted and what
	// it saw (cut short, masked).
	Failed []CheckFailure `json:"failed,omitempty"`
}

// CheckFailure is one failed check: the check as the manifest writes it,
// what it wanted and what the trial gave.
type CheckFailure struct {
	Check string `json:"check"`
	Want  string `json:"want"`
	Got   string `json:"got"`
}

// Cost is what one trial cost in US dollars (scoring.Pricing.Price); Unpriced
// says what had no price and is not in USD.
type Cost struct {
	USD        float64 `json:"usd"`
	ModelUSD   float64 `json:"model_usd"`
	SandboxUSD float64 `json:"sandbox_usd"`
	Tokens     int64   `json:"tokens,omitempty"`
	Unpriced   string  `json:"unpriced,omitempty"`
}

// AttemptError is how an earlier attempt ended: always an infra failure.
type AttemptError struct {
	Kind    runner.ErrorKind `json:"kind"`
	Message string           `json:"message"`
	// SandboxID is the sandbox the attempt ran in, when it got one.
	SandboxID string `json:"sandbox_id,omitempty"`
}

// Wrong reports whether a trial that ran to its end gave a wrong answer:
// a check failed, or its task's verifier gave less than full reward. The
// one rule for "wrong", never "ok".
func (t *Trial) Wrong() bool {
	if !t.Success {
		return false
	}
	failed := slices.ContainsFunc(t.Checks, func(c CheckResult) bool { return c.Passed < c.Of })
	return failed || t.Reward != nil && *t.Reward < MarkOf(t.PassMark)-1e-9
}

// ExitText is the trial's exit code as the reports write it: "none"
// without one.
func (t *Trial) ExitText() string {
	if t.ExitCode == nil {
		return "none"
	}
	return strconv.Itoa(*t.ExitCode)
}

// MarkOf is the score at which a trial whose pass mark is passMark solves
// its task: passMark, else 1.
func MarkOf(passMark *float64) float64 {
	if passMark != nil {
		return *passMark
	}
	return 1
}

// ByCandidate groups trials by candidate in order of first appearance,
// pointing into trials rather than copying them.
func ByCandidate(trials []Trial) (order []string, byID map[string][]*Trial) {
	count := map[string]int{}
	for i := range trials {
		id := trials[i].CandidateID
		if _, ok := count[id]; !ok {
			order = append(order, id)
		}
		count[id]++
	}
	byID = make(map[string][]*Trial, len(order))
	for i := range trials {
		id := trials[i].CandidateID
		if byID[id] == nil {
			byID[id] = make([]*Trial, 0, count[id])
		}
		byID[id] = append(byID[id], &trials[i])
	}
	return order, byID
}
