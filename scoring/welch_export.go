package scoring

// WelchResult is the outcome of Welch's unequal-variances t-test of whether
// two samples' means differ, two-sided at level Alpha.
type WelchResult struct {
	// Difference is mean(a) - mean(b); DifferenceCI95 its 95% interval.
	Difference     float64    `json:"difference"`
	DifferenceCI95 [2]float64 `json:"difference_ci95"`
	// T and DF are the t statistic and its Welch–Satterthwaite degrees of
	// freedom; nil when neither sample varies (then PValue is 0 when the
	// means differ by more than 1e-9, else 1).
	T  *float64 `json:"t"`
	DF *float64 `json:"df"`
	// PValue is two-sided.
	PValue float64 `json:"p_value"`
	// Significant is PValue < Alpha.
	Significant bool `json:"significant"`
}

// WelchTest runs Welch's t-test on samples a and b, the same test the
// standings use to decide a winner (see compareMeans). ok is false when
// either sample has fewer than two values: there is then no variance to
// estimate the noise with, and no test.
func WelchTest(a, b []float64) (r WelchResult, ok bool) {
	if len(a) < 2 || len(b) < 2 {
		return WelchResult{}, false
	}
	t := compareMeans(summarize(a), summarize(b))
	if t.method != "welch-t" || t.p == nil || t.diffCI == nil {
		return WelchResult{}, false // unreachable with two values a side
	}
	return WelchResult{
		Difference:     t.diff,
		DifferenceCI95: *t.diffCI,
		T:              t.t,
		DF:             t.df,
		PValue:         *t.p,
		Significant:    t.clear,
	}, true
}
