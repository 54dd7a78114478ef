package scoring

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/forge-run/forge/record"
)

// The methods of a paired comparison (PairedResult.Method).
const (
	MethodPairedT  = "paired-t"
	MethodWilcoxon = "wilcoxon-signed-rank"
)

// pairedTMinPairs is the fewest pairs for which ComparePaired may use paired t.
const pairedTMinPairs = 30

// wilcoxonExactMax is the most non-zero differences with an exact Wilcoxon p.
const wilcoxonExactMax = 50

// PairedResult compares A with B over their common tasks, two-sided at Alpha.
type PairedResult struct {
	// Method is MethodWilcoxon or MethodPairedT (see ComparePaired).
	Method string `json:"method"`
	// N is the number of pairs (tasks).
	N int `json:"n"`
	record.WinLoss
	// DifferenceCI95 is the paired-t interval whatever the method; nil
	// with fewer than two pairs.
	MeanDifference float64     `json:"mean_difference"`
	DifferenceCI95 *[2]float64 `json:"difference_ci95,omitempty"`
	// Statistic is t or W+; nil without spread (t) or all zero (W+).
	Statistic *float64 `json:"statistic,omitempty"`
	// NormalityP is the Jarque–Bera p-value, when computed.
	NormalityP *float64 `json:"normality_p,omitempty"`
	// PValue is two-sided; Significant is PValue < Alpha.
	PValue      float64 `json:"p_value"`
	Significant bool    `json:"significant"`
}

// ComparePaired compares a and b, two candidates' scores on the same tasks,
// from A's side: the Wilcoxon signed-rank test below 30 pairs or when the
// differences fail Jarque–Bera (p < 0.05), else the paired t-test. Wilcoxon's
// p is exact up to 50 non-zero differences, ties included (unlike R and
// SciPy), because forge's ties are often whole tasks. It returns an error for
// slices of different lengths, empty or not finite.
func ComparePaired(a, b []float64) (PairedResult, error) {
	if len(a) != len(b) {
		return PairedResult{}, fmt.Errorf("paired comparison of %d scores with %d", len(a), len(b))
	}
	if len(a) == 0 {
		return PairedResult{}, fmt.Errorf("paired comparison without pairs")
	}
	d := make([]float64, len(a))
	r := PairedResult{N: len(a)}
	for i := range a {
		if math.IsNaN(a[i]) || math.IsInf(a[i], 0) || math.IsNaN(b[i]) || math.IsInf(b[i], 0) {
			return PairedResult{}, fmt.Errorf("pair %d: score %v against %v is not finite", i, a[i], b[i])
		}
		d[i] = a[i] - b[i]
		switch {
		case math.Abs(d[i]) <= tieEpsilon:
			r.Ties++
		case d[i] > 0:
			r.Wins++
		default:
			r.Losses++
		}
	}
	s := summarize(d)
	r.MeanDifference = s.mean
	if s.n >= 2 {
		r.DifferenceCI95 = new(meanCI95(s))
	}
	if s.n >= pairedTMinPairs && s.variance != 0 {
		r.NormalityP = new(jarqueBeraP(d))
	}
	if s.n >= pairedTMinPairs && (r.NormalityP == nil || *r.NormalityP >= Alpha) {
		r.Method = MethodPairedT
		r.Statistic, r.PValue = pairedT(s)
	} else {
		r.Method = MethodWilcoxon
		r.Statistic, r.PValue = wilcoxon(d)
	}
	r.Significant = r.PValue < Alpha
	return r, nil
}

// pairedT is the one-sample t-test of mean 0 of the differences (n ≥ 2).
func pairedT(s summary) (*float64, float64) {
	if s.variance == 0 {
		if math.Abs(s.mean) > tieEpsilon {
			return nil, 0
		}
		return nil, 1
	}
	t := s.mean / (s.sd / math.Sqrt(float64(s.n)))
	p := 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(s.n - 1)}.Survival(math.Abs(t))
	return &t, math.Min(p, 1)
}

// jarqueBeraP is the p-value of the Jarque–Bera test of normality against χ²
// with 2 degrees of freedom. xs must vary.
func jarqueBeraP(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := float64(len(s))
	var mean float64
	for _, x := range s {
		mean += x
	}
	mean /= n
	var m2, m3, m4 float64
	for _, x := range s {
		d := x - mean
		d2 := d * d
		m2 += d2
		m3 += d2 * d
		m4 += d2 * d2
	}
	m2, m3, m4 = m2/n, m3/n, m4/n
	skew := m3 / math.Pow(m2, 1.5)
	kurt := m4 / (m2 * m2)
	jb := n / 6 * (skew*skew + (kurt-3)*(kurt-3)/4)
	return distuv.ChiSquared{K: 2}.Survival(jb)
}

// signedRanks drops differences within 1e-9 of zero and ranks the rest by
// absolute value, near-equal ones sharing their average rank. Ranks are
// doubled to stay whole; ties lists the size of each tied group.
func signedRanks(d []float64) (rank2 []int, pos []bool, ties []int) {
	var nz []float64
	for _, x := range d {
		if math.Abs(x) > tieEpsilon {
			nz = append(nz, x)
		}
	}
	slices.SortFunc(nz, func(a, b float64) int { return cmp.Or(cmp.Compare(math.Abs(a), math.Abs(b)), cmp.Compare(a, b)) })
	rank2 = make([]int, len(nz))
	pos = make([]bool, len(nz))
	for i := 0; i < len(nz); {
		j := i + 1
		for j < len(nz) && math.Abs(nz[j])-math.Abs(nz[i]) <= tieEpsilon {
			j++
		}
		// Positions i..j-1 hold ranks i+1..j; their average doubled is i+1+j.
		for k := i; k < j; k++ {
			rank2[k] = i + 1 + j
			pos[k] = nz[k] > 0
		}
		ties = append(ties, j-i)
		i = j
	}
	return rank2, pos, ties
}

// wilcoxon is the signed-rank test of d: W+ (nil when all are zero) and p.
func wilcoxon(d []float64) (*float64, float64) {
	rank2, pos, ties := signedRanks(d)
	n := len(rank2)
	if n == 0 {
		return nil, 1
	}
	w2 := 0
	for i, r := range rank2 {
		if pos[i] {
			w2 += r
		}
	}
	w := float64(w2) / 2
	if n <= wilcoxonExactMax {
		return &w, wilcoxonExactP(rank2, w2)
	}
	return &w, wilcoxonNormalP(n, ties, w)
}

// wilcoxonExactP is the exact two-sided p-value of a doubled signed-rank sum
// w2 over the 2^n sign patterns; counts stay exact in float64 for n ≤ 53.
func wilcoxonExactP(rank2 []int, w2 int) float64 {
	total := 0
	for _, r := range rank2 {
		total += r
	}
	// count[s] is the number of sign patterns of the ranks so far whose
	// positive ranks sum to s.
	count := make([]float64, total+1)
	count[0] = 1
	reach := 0
	for _, r := range rank2 {
		for s := reach; s >= 0; s-- {
			if count[s] != 0 {
				count[s+r] += count[s]
			}
		}
		reach += r
	}
	var le, ge, all float64
	for s, c := range count {
		all += c
		if s <= w2 {
			le += c
		}
		if s >= w2 {
			ge += c
		}
	}
	return math.Min(1, 2*math.Min(le, ge)/all)
}

// wilcoxonNormalP is the normal approximation of the signed-rank p-value, with
// tie and continuity corrections (as R's wilcox.test, correct = TRUE).
func wilcoxonNormalP(n int, ties []int, w float64) float64 {
	nf := float64(n)
	mu := nf * (nf + 1) / 4
	v := nf * (nf + 1) * (2*nf + 1) / 24
	for _, t := range ties {
		tf := float64(t)
		v -= (tf*tf*tf - tf) / 48
	}
	z := w - mu
	switch {
	case z > 0.5:
		z -= 0.5
	case z < -0.5:
		z += 0.5
	default:
		return 1
	}
	z /= math.Sqrt(v)
	return math.Min(1, 2*distuv.UnitNormal.Survival(math.Abs(z)))
}
