package scoring

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Alpha is the significance level of every interval and test, two-sided.
const Alpha = 0.05

// tieEpsilon is how close two single-trial scores must be to tie.
const tieEpsilon = 1e-9

// summary describes a sample, summed in sorted order so it is order-independent.
type summary struct {
	n        int
	mean, sd float64 // sd is the sample (n-1) standard deviation; 0 for n < 2
	variance float64
}

func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 1 {
		return summary{n: 1, mean: s[0]}
	}
	mean, variance := stat.MeanVariance(s, nil)
	if variance < 0 || math.IsNaN(variance) {
		variance = 0
	}
	return summary{n: len(s), mean: mean, sd: math.Sqrt(variance), variance: variance}
}

// Summary describes a sample: size, mean, sample standard deviation and the
// 95% Student-t interval of the mean (the mean itself below two values).
type Summary struct {
	N    int
	Mean float64
	SD   float64
	CI95 [2]float64
}

// Summarize describes xs as the standings do, whatever their order.
func Summarize(xs []float64) Summary {
	s := summarize(xs)
	return Summary{N: s.n, Mean: s.mean, SD: s.sd, CI95: meanCI95(s)}
}

// tQuantile is the p quantile of Student's t with df degrees of freedom.
func tQuantile(p, df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(p)
}

// meanCI95 is the 95% Student-t interval of the mean (the mean below two values).
func meanCI95(s summary) [2]float64 {
	if s.n < 2 {
		return [2]float64{s.mean, s.mean}
	}
	h := tQuantile(1-Alpha/2, float64(s.n-1)) * s.sd / math.Sqrt(float64(s.n))
	return [2]float64{s.mean - h, s.mean + h}
}

// scoreCI95 is the BoundedCI95 interval of a mean score with trials as units.
func scoreCI95(s summary) [2]float64 {
	m := clamp01(s.mean)
	if lo, hi, ok := BoundedCI95(m, s.sd/math.Sqrt(float64(s.n)), s.n); ok {
		return [2]float64{lo, hi}
	}
	return [2]float64{m, m}
}

// wilson95 is the 95% Wilson interval of k successes in n trials ([0, 1] for n 0).
func wilson95(k, n int) [2]float64 {
	if n <= 0 {
		return [2]float64{0, 1}
	}
	nf := float64(n)
	return wilsonInterval(float64(k)/nf, nf, distuv.UnitNormal.Quantile(1-Alpha/2))
}

// wilsonInterval is the Wilson score interval of proportion p in n trials
// with critical value z, clamped to [0, 1] against rounding.
func wilsonInterval(p, n, z float64) [2]float64 {
	z2 := z * z
	denom := 1 + z2/n
	center := (p + z2/(2*n)) / denom
	half := z / denom * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return [2]float64{math.Max(0, center-half), math.Min(1, center+half)}
}

// median of xs (the mean of the middle two for an even count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// testResult is the outcome of comparing two samples' means.
type testResult struct {
	method string
	diff   float64
	diffCI *[2]float64
	t, df  *float64
	p      *float64
	clear  bool // the means differ at level Alpha
}

// compareMeans tests whether a's mean differs from b's, two-sided: Welch's
// t-test; a side with a single value borrows the other's variance; single
// values on both sides differ when more than 1e-9 apart.
func compareMeans(a, b summary) testResult {
	r := testResult{diff: a.mean - b.mean}
	var se2, df float64
	switch {
	case a.n >= 2 && b.n >= 2:
		r.method = "welch-t"
		va, vb := a.variance/float64(a.n), b.variance/float64(b.n)
		se2 = va + vb
		if se2 > 0 {
			df = se2 * se2 / (va*va/float64(a.n-1) + vb*vb/float64(b.n-1))
		}
	case a.n >= 2 && b.n == 1, a.n == 1 && b.n >= 2:
		r.method = "t-borrowed-variance"
		known := a
		if b.n > a.n {
			known = b
		}
		se2 = known.variance * (1/float64(a.n) + 1/float64(b.n))
		df = float64(known.n - 1)
	default:
		r.method = "exact"
		r.clear = math.Abs(r.diff) > tieEpsilon
		return r
	}
	if se2 <= 0 || math.IsNaN(se2) {
		// No noise at all: the difference is certain (p = 0) or nil (p = 1).
		p := 1.0
		if math.Abs(r.diff) > tieEpsilon {
			p = 0
		}
		r.p = &p
		r.clear = p < Alpha
		r.diffCI = &[2]float64{r.diff, r.diff}
		return r
	}
	se := math.Sqrt(se2)
	t := r.diff / se
	dist := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
	p := min(1, 2*dist.Survival(math.Abs(t)))
	h := dist.Quantile(1-Alpha/2) * se
	r.t, r.df, r.p, r.diffCI = &t, &df, &p, &[2]float64{r.diff - h, r.diff + h}
	r.clear = p < Alpha
	return r
}

// WelchResult is Welch's t-test of two samples' means, two-sided at Alpha.
type WelchResult struct {
	// Difference is mean(a) - mean(b); DifferenceCI95 its 95% interval.
	Difference     float64    `json:"difference"`
	DifferenceCI95 [2]float64 `json:"difference_ci95"`
	// T and DF are nil when neither sample varies (PValue is then 0 or 1).
	T  *float64 `json:"t"`
	DF *float64 `json:"df"`
	// PValue is two-sided.
	PValue float64 `json:"p_value"`
	// Significant is PValue < Alpha.
	Significant bool `json:"significant"`
}

// WelchTest runs Welch's t-test on a and b, the test behind the winner. ok is
// false when either sample has fewer than two values.
func WelchTest(a, b []float64) (r WelchResult, ok bool) {
	if len(a) < 2 || len(b) < 2 {
		return WelchResult{}, false
	}
	t := compareMeans(summarize(a), summarize(b)) // Welch's test: two values a side
	return WelchResult{
		Difference:     t.diff,
		DifferenceCI95: *t.diffCI,
		T:              t.t,
		DF:             t.df,
		PValue:         *t.p,
		Significant:    t.clear,
	}, true
}
