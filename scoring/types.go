package scoring

// Standing is one candidate's line in the standings (docs/results.md). Every
// float in it is finite, so results.json always encodes.
type Standing struct {
	// Rank is 1-based standard competition ranking: tied candidates share
	// the better rank and the next rank skips ("1, =2, =2, 4").
	Rank int `json:"rank"`
	// Tied is true when the rank is shared with another candidate ("=2").
	Tied        bool   `json:"tied"`
	CandidateID string `json:"candidate_id"`
	// Score is the mean composite score of the scored trials, in [0, 1].
	Score float64 `json:"score"`
	// ScoreStddev is the sample standard deviation (n-1) of the trial
	// scores; 0 with fewer than two scored trials.
	ScoreStddev float64 `json:"score_stddev"`
	// ScoreCI95 is the 95% confidence interval of the mean score
	// (BoundedCI95), within [0, 1]. With fewer than two scored trials (or
	// tasks) there is no interval and it collapses to [Score, Score].
	ScoreCI95 [2]float64 `json:"score_ci95"`
	// SuccessRate is Successes over the trials that ran to an end (all but
	// infra, auth and cancelled ones, which say nothing about the
	// candidate); SuccessCI95 is its 95% Wilson score interval ([0, 1] when
	// there are no such trials).
	SuccessRate float64    `json:"success_rate"`
	SuccessCI95 [2]float64 `json:"success_ci95"`
	Successes   int        `json:"successes"`
	// The runtime figures are over successful trials only; 0 when none.
	// The standard deviation is the sample one (n-1).
	RuntimeMeanSeconds   float64 `json:"runtime_mean_seconds"`
	RuntimeStddevSeconds float64 `json:"runtime_stddev_seconds"`
	RuntimeMedianSeconds float64 `json:"runtime_median_seconds"`
	// Trials is how many results the candidate has; ScoredTrials how many of
	// them got a composite score (not infra, auth or cancelled trials, nor a
	// trial whose only weighted scorers are judges that all failed).
	Trials       int `json:"trials"`
	ScoredTrials int `json:"scored_trials"`
	// Errors counts failed trials by error kind, e.g. {"timeout": 1}.
	Errors map[string]int `json:"errors,omitempty"`
	// Breakdown is each scorer's mean normalised score over the trials in
	// which it had a value, by scorer name.
	Breakdown map[string]float64 `json:"breakdown,omitempty"`
	// JudgeErrors counts judge verdicts that failed (timeout, garbage
	// output, non-zero exit); those trials are scored without that judge.
	JudgeErrors int `json:"judge_errors,omitempty"`
	// Notes say, in words, what affected the score: judge failures, missing
	// submitted metrics, clamped raw values.
	Notes []string `json:"notes,omitempty"`
	// Cost is what the candidate's trials cost, when any has a cost
	// (a price, or usage reported).
	Cost *CostStanding `json:"cost,omitempty"`
	// Suite is set for a suite's candidate, whose Score is then the
	// weighted mean of its task scores, ScoreStddev their standard
	// deviation and ScoreCI95 the interval with tasks as the sampling unit.
	Suite *SuiteStanding `json:"suite,omitempty"`
}

// SuiteStanding is what a candidate did over a suite's tasks.
type SuiteStanding struct {
	// Tasks is how many tasks have a task score (a scored trial).
	Tasks int `json:"tasks"`
	// Solved is how many tasks it passed in every trial: each trial
	// succeeded with a full score.
	Solved int `json:"solved"`
	// PassAtK is the unbiased pass@k (K: --pass-at) over the tasks with at
	// least K trials that ran to an end, weighted as the score, a trial
	// passing as for Solved; null when no task has that many.
	K       int      `json:"k"`
	PassAtK *float64 `json:"pass_at_k"`
}

// Comparison is the test behind the winner line: rank 1 against rank 2.
type Comparison struct {
	Best   string `json:"best"`
	Second string `json:"second"`
	// Method names the test: "welch-t" (Welch's unequal-variances t-test,
	// both have at least two scored trials), "t-borrowed-variance" (one side
	// has a single scored trial and borrows the other's variance) or "exact"
	// (single trials: only equality within 1e-9 can be judged).
	Method      string  `json:"method"`
	BestScore   float64 `json:"best_score"`
	SecondScore float64 `json:"second_score"`
	// Difference is BestScore - SecondScore; DifferenceCI95 its 95% interval
	// (null for the exact method).
	Difference     float64     `json:"difference"`
	DifferenceCI95 *[2]float64 `json:"difference_ci95"`
	// Ratio is BestScore / SecondScore, or 0 when SecondScore is 0.
	Ratio float64 `json:"ratio"`
	// T and DF are the t statistic and its (Welch–Satterthwaite) degrees of
	// freedom; null when there is no test or the statistic is infinite
	// (both sides have zero variance and different means).
	T  *float64 `json:"t"`
	DF *float64 `json:"df"`
	// PValue is two-sided; null for the exact method.
	PValue *float64 `json:"p_value"`
	// Alpha is the significance level the decision used (0.05).
	Alpha float64 `json:"alpha"`
	// Tasks, Wins, Losses and Ties, in a suite, count the common tasks on
	// which the best scored higher than the second, lower, or the same;
	// Difference is then the mean per-task difference and the method the
	// paired test over them (MethodPairedT, MethodWilcoxon).
	Tasks  int `json:"tasks,omitempty"`
	Wins   int `json:"wins,omitempty"`
	Losses int `json:"losses,omitempty"`
	Ties   int `json:"ties,omitempty"`
	// Clear is true when the best is distinguishable from the second: the
	// 95% interval of the difference excludes 0 (p < Alpha), or, for single
	// trials, the scores differ by more than 1e-9.
	Clear bool `json:"clear"`
}
