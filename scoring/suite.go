package scoring

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// PassAtK is the unbiased estimate of pass@k from n trials of which c
// succeeded (Chen et al. 2021, eq. 1), computed as 1 - ∏(1 - k/i) to avoid
// large binomials. It is NaN unless n ≥ k ≥ 1 and 0 ≤ c ≤ n.
func PassAtK(n, c, k int) float64 {
	if k < 1 || n < k || c < 0 || c > n {
		return math.NaN()
	}
	if n-c < k {
		return 1 // every draw of k contains a success
	}
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - float64(k)/float64(i)
	}
	return 1 - prod
}

// TaskScore is a candidate's mean score on a task and its weight (0 means 1).
type TaskScore struct {
	Score  float64 `json:"score"`
	Weight float64 `json:"weight,omitempty"`
}

// SuiteSummary is a candidate's standing over a suite's tasks.
type SuiteSummary struct {
	// Tasks is the number of tasks scored.
	Tasks int `json:"tasks"`
	// Mean is the weighted mean of the task scores.
	Mean float64 `json:"mean"`
	// SE is Mean's standard error, tasks as the unit; 0 with one task.
	SE float64 `json:"se"`
	// CI95 is Mean's BoundedCI95; nil with fewer than two tasks.
	CI95 *[2]float64 `json:"ci95,omitempty"`
}

// SummarizeTasks is a candidate's suite score: the weighted mean of its task
// scores with the cluster-robust standard error of Miller (2024,
// arXiv:2411.00640), tasks being the independent unit, and its BoundedCI95.
// Tasks are sorted first so their order does not change the sums.
func SummarizeTasks(tasks []TaskScore) (SuiteSummary, error) {
	if len(tasks) == 0 {
		return SuiteSummary{}, errors.New("no task scores")
	}
	ts := make([]TaskScore, len(tasks))
	for i, t := range tasks {
		if !(t.Score >= 0 && t.Score <= 1) {
			return SuiteSummary{}, fmt.Errorf("task %d: score %v is not in [0, 1]", i, t.Score)
		}
		if !(t.Weight >= 0) || math.IsInf(t.Weight, 1) {
			return SuiteSummary{}, fmt.Errorf("task %d: weight %v is not a finite number > 0 (or 0 for 1)", i, t.Weight)
		}
		t.Weight = cmp.Or(t.Weight, 1)
		ts[i] = t
	}
	slices.SortFunc(ts, func(a, b TaskScore) int {
		return cmp.Or(cmp.Compare(a.Score, b.Score), cmp.Compare(a.Weight, b.Weight))
	})
	var sw, swt float64
	for _, t := range ts {
		sw += t.Weight
		swt += t.Weight * t.Score
	}
	m := swt / sw
	// Equal scores give exactly that score (no rounding past the bounds).
	if ts[0].Score == ts[len(ts)-1].Score {
		m = ts[0].Score
	}
	m = clamp01(m)
	s := SuiteSummary{Tasks: len(ts), Mean: m}
	if len(ts) < 2 {
		return s, nil
	}
	var ss float64
	for _, t := range ts {
		d := t.Weight * (t.Score - m)
		ss += d * d
	}
	n := float64(len(ts))
	s.SE = math.Sqrt(n/(n-1)*ss) / sw
	if lo, hi, ok := BoundedCI95(s.Mean, s.SE, s.Tasks); ok {
		s.CI95 = &[2]float64{lo, hi}
	}
	return s, nil
}

// BoundedCI95 is a 95% interval for the mean of scores in [0, 1] that never
// leaves [0, 1]: the Wilson interval with effective sample size
// mean·(1-mean)/se² (Korn & Graubard 1998) and Student's t for z. With se = 0
// it is [mean, mean], except at 0 or 1: there the Wilson interval of n in n.
// ok is false with fewer than two units, a mean outside [0, 1], a negative or
// NaN se, or se > 0 at a mean of exactly 0 or 1.
func BoundedCI95(mean, se float64, units int) (lo, hi float64, ok bool) {
	if units < 2 || !(mean >= 0 && mean <= 1) || !(se >= 0) {
		return 0, 0, false
	}
	if se == 0 && (mean == 0 || mean == 1) {
		// All 0 or all 1: no spread, but not no uncertainty. The units are
		// 0/1 outcomes: 5 of 5 is [0.57, 1], not [1, 1].
		ci := wilsonInterval(mean, float64(units), tQuantile(1-Alpha/2, float64(units-1)))
		return math.Min(ci[0], mean), math.Max(ci[1], mean), true
	}
	if se == 0 {
		return mean, mean, true
	}
	if mean == 0 || mean == 1 || math.IsInf(se, 1) {
		return 0, 0, false
	}
	nEff := mean * (1 - mean) / (se * se)
	switch {
	case math.IsInf(nEff, 1): // se² underflows: no spread to speak of
		return mean, mean, true
	case nEff == 0: // se² overflows
		return 0, 0, false
	}
	ci := wilsonInterval(mean, nEff, tQuantile(1-Alpha/2, float64(units-1)))
	// The centre moves towards 1/2, so the mean lies inside in exact
	// arithmetic; keep it inside against rounding.
	return math.Min(ci[0], mean), math.Max(ci[1], mean), true
}
