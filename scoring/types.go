package scoring

// Standing is one candidate's line in the standings (CONTRACTS §4).
type Standing struct {
	Rank int `json:"rank"`
	// Tied is true when the rank is shared with another candidate ("=2").
	Tied                 bool       `json:"tied"`
	CandidateID          string     `json:"candidate_id"`
	Score                float64    `json:"score"`
	ScoreStddev          float64    `json:"score_stddev"`
	ScoreCI95            [2]float64 `json:"score_ci95"`
	SuccessRate          float64    `json:"success_rate"`
	SuccessCI95          [2]float64 `json:"success_ci95"`
	Successes            int        `json:"successes"`
	RuntimeMeanSeconds   float64    `json:"runtime_mean_seconds"`
	RuntimeStddevSeconds float64    `json:"runtime_stddev_seconds"`
	RuntimeMedianSeconds float64    `json:"runtime_median_seconds"`
	Trials               int        `json:"trials"`
	// Errors counts failed trials by error kind, e.g. {"timeout": 1}.
	Errors map[string]int `json:"errors,omitempty"`
}

// Comparison is the test behind the winner line: rank 1 against rank 2.
type Comparison struct {
	Best   string `json:"best"`
	Second string `json:"second"`
	// Method names the test, e.g. "welch-t".
	Method string  `json:"method"`
	Ratio  float64 `json:"ratio"`
	PValue float64 `json:"p_value"`
	// Clear is true when the best is significantly better than the second.
	Clear bool `json:"clear"`
}
