package record

// What scoring makes of a run's trials, as the record keeps it.

import "github.com/forge-run/forge/internal/text"

// Standing is one candidate's line in the standings (docs/results.md). Every
// float in it is finite, so results.json always encodes.
type Standing struct {
	// Rank is standard competition ranking ("1, =2, =2, 4"); Tied: shared.
	Rank        int    `json:"rank"`
	Tied        bool   `json:"tied"`
	CandidateID string `json:"candidate_id"`
	// Score is the mean composite score of the scored trials; ScoreCI95
	// (BoundedCI95) collapses to [Score, Score] below two of them.
	Score       float64    `json:"score"`
	ScoreStddev float64    `json:"score_stddev"`
	ScoreCI95   [2]float64 `json:"score_ci95"`
	// SuccessRate is over the trials that ran to an end, with a Wilson
	// interval ([0, 1] without such trials).
	SuccessRate float64    `json:"success_rate"`
	SuccessCI95 [2]float64 `json:"success_ci95"`
	Successes   int        `json:"successes"`
	// The runtime figures are over successful trials; 0 when none.
	RuntimeMeanSeconds   float64 `json:"runtime_mean_seconds"`
	RuntimeStddevSeconds float64 `json:"runtime_stddev_seconds"`
	RuntimeMedianSeconds float64 `json:"runtime_median_seconds"`
	// ScoredTrials are the Trials that got a composite score.
	Trials       int `json:"trials"`
	ScoredTrials int `json:"scored_trials"`
	// Errors counts failed trials by error kind, e.g. {"timeout": 1}.
	Errors map[string]int `json:"errors,omitempty"`
	// Breakdown is each scorer's mean normalised score, by name.
	Breakdown map[string]float64 `json:"breakdown,omitempty"`
	// JudgeErrors counts failed judge verdicts; Notes say in words what
	// else affected the score.
	JudgeErrors int `json:"judge_errors,omitempty"`
	// Unverified counts the trials their task's verifier could not judge
	// (verify_failed): not scored, not in the success rate.
	Unverified int      `json:"unverified,omitempty"`
	Notes      []string `json:"notes,omitempty"`
	// Cost is set when any trial has a cost.
	Cost *CostStanding `json:"cost,omitempty"`
	// Suite is set for a suite's candidate, whose score figures are then
	// over its task scores, tasks being the sampling unit.
	Suite *SuiteStanding `json:"suite,omitempty"`
}

// ScoreText is the mean score as forge prints it: "0.92 ± 0.01" with at least
// two scored trials (tasks, in a suite), else "0.87".
func (st Standing) ScoreText() string {
	units := st.ScoredTrials
	if st.Suite != nil {
		units = st.Suite.Tasks
	}
	if units < 2 {
		return text.Score(st.Score)
	}
	return text.Interval(st.Score, st.ScoreCI95[0], st.ScoreCI95[1])
}

// SuiteStanding is what a candidate did over a suite's tasks.
type SuiteStanding struct {
	// Tasks have a task score; Solved were passed in every trial.
	Tasks  int `json:"tasks"`
	Solved int `json:"solved"`
	// PassAtK is the unbiased pass@k (K: --pass-at) over the tasks with at
	// least K trials; null when there are none.
	K       int      `json:"k"`
	PassAtK *float64 `json:"pass_at_k"`
}

// Comparison is the test behind the winner line: rank 1 against rank 2.
type Comparison struct {
	Best   string `json:"best"`
	Second string `json:"second"`
	// Method names the test: "welch-t", "t-borrowed-variance" (one side has
	// a single trial), "exact" (both do), or a suite's paired method.
	Method      string  `json:"method"`
	BestScore   float64 `json:"best_score"`
	SecondScore float64 `json:"second_score"`
	// Difference is BestScore - SecondScore (a suite's: the mean per-task
	// difference); DifferenceCI95 is null for the exact method.
	Difference     float64     `json:"difference"`
	DifferenceCI95 *[2]float64 `json:"difference_ci95"`
	// Ratio is BestScore / SecondScore, or 0 when SecondScore is 0.
	Ratio float64 `json:"ratio"`
	// T and DF are null when there is no test or T is infinite.
	T  *float64 `json:"t"`
	DF *float64 `json:"df"`
	// PValue is two-sided; null for the exact method.
	PValue *float64 `json:"p_value"`
	// Alpha is the significance level the decision used (0.05).
	Alpha float64 `json:"alpha"`
	// Tasks, Wins, Losses and Ties count a suite's common tasks.
	Tasks  int `json:"tasks,omitempty"`
	Wins   int `json:"wins,omitempty"`
	Losses int `json:"losses,omitempty"`
	Ties   int `json:"ties,omitempty"`
	// Clear: p < Alpha, or single trials more than 1e-9 apart.
	Clear bool `json:"clear"`
}

// CostStanding is what a candidate's trials cost, all together.
type CostStanding struct {
	// USD is the total; MeanUSD is per costed trial.
	USD          float64 `json:"usd"`
	MeanUSD      float64 `json:"mean_usd"`
	ModelUSD     float64 `json:"model_usd"`
	SandboxUSD   float64 `json:"sandbox_usd"`
	Tokens       int64   `json:"tokens"`
	CostedTrials int     `json:"costed_trials"`
	// PerSuccessUSD and PerSolvedUSD are what a win costs; null without
	// one, or when no trial's cost had a price (Unpriced).
	PerSuccessUSD *float64 `json:"per_success_usd"`
	PerSolvedUSD  *float64 `json:"per_solved_usd,omitempty"`
	// UnpricedTrials had something without a price, left out of USD.
	UnpricedTrials int `json:"unpriced_trials,omitempty"`
}

// Unpriced says that none of k's costed trials had a price.
func (k *CostStanding) Unpriced() bool { return k.UnpricedTrials == k.CostedTrials && k.USD == 0 }

// Unjudged is a candidate none of whose trials says anything about it.
type Unjudged struct {
	CandidateID string `json:"candidate_id"`
	// TaskIDs, in a suite, are the tasks none of its trials ran to an end.
	TaskIDs []string `json:"task_ids,omitempty"`
	// Reason is how its first unscored trial ended, or "no results".
	Reason string `json:"reason"`
}

// TaskRow is one task of the matrix: every candidate's result and its spread.
type TaskRow struct {
	TaskID string  `json:"task_id"`
	Weight float64 `json:"weight"`
	// Cells are by candidate, in the standings' order.
	Cells []TaskCell `json:"cells"`
	// Mean low: a hard task; Spread high: one that tells them apart.
	Mean   float64 `json:"mean"`
	Spread float64 `json:"spread"`
	// Unscored: no trial of the task has a score (none played, or none
	// could be scored): not a hard task, listed after the others.
	Unscored bool `json:"unscored,omitempty"`
}

// TaskCell is one candidate's result on one task.
type TaskCell struct {
	CandidateID string `json:"candidate_id"`
	// Score is the mean of the scored trials; null when none was scored.
	Score     *float64 `json:"score"`
	Trials    int      `json:"trials"`
	Successes int      `json:"successes"`
	// Passes counts the trials that passed; Solved: every one did.
	Passes int  `json:"passes"`
	Solved bool `json:"solved"`
}

// HeadToHead counts the common tasks on which A scored higher than B, lower,
// or the same within 1e-9.
type HeadToHead struct {
	A string `json:"a"`
	B string `json:"b"`
	WinLoss
}

// WinLoss counts task scores won, lost and tied (within 1e-9).
type WinLoss struct {
	Wins   int `json:"wins"`
	Losses int `json:"losses"`
	Ties   int `json:"ties"`
}
