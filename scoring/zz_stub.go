package scoring

// TEMPORARY: replaced by the suite statistics (helper branch h-stats).

import "math"

const (
	MethodPairedT  = "paired-t"
	MethodWilcoxon = "wilcoxon-signed-rank"
)

func PassAtK(n, c, k int) float64 {
	if n < k || k < 1 {
		return math.NaN()
	}
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}

func BoundedCI95(mean, se float64, units int) (float64, float64, bool) {
	if units < 2 {
		return 0, 0, false
	}
	h := tQuantile(1-Alpha/2, float64(units-1)) * se
	return math.Max(0, mean-h), math.Min(1, mean+h), true
}

type Paired struct {
	Method             string
	N                  int
	Wins, Losses, Ties int
	MeanDiff           float64
	DiffCI95           [2]float64
	P                  float64
	Significant        bool
}

func PairedTest(a, b []float64) Paired {
	d := make([]float64, len(a))
	r := Paired{Method: MethodPairedT, N: len(a), P: 1}
	for i := range a {
		d[i] = a[i] - b[i]
		switch {
		case d[i] > tieEpsilon:
			r.Wins++
		case d[i] < -tieEpsilon:
			r.Losses++
		default:
			r.Ties++
		}
	}
	s := summarize(d)
	r.MeanDiff = s.mean
	if s.n < 2 {
		return r
	}
	tr := compareMeans(s, summary{n: s.n, mean: 0})
	if tr.p != nil {
		r.P = *tr.p
	}
	r.Significant = tr.clear
	return r
}
