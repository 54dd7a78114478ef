package scoring

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// pass@k values computed exactly with Python's fractions and math.comb:
// 1 - Fraction(comb(n-c, k), comb(n, k)).
func TestPassAtKKnownValues(t *testing.T) {
	for _, c := range []struct {
		n, c, k int
		want    float64
	}{
		{10, 3, 1, 0.3}, // pass@1 is c/n
		{5, 2, 2, 0.7},  // 1 - C(3,2)/C(5,2) = 1 - 3/10
		{200, 13, 10, 0.49755111473060615},
		{100, 1, 50, 0.5},
		{20, 0, 5, 0},
		{4, 4, 4, 1},
		{5, 3, 3, 1}, // n-c < k: every draw holds a success
		{1, 1, 1, 1},
		{1, 0, 1, 0},
	} {
		near(t, "PassAtK", PassAtK(c.n, c.c, c.k), c.want, 1e-12)
	}
	for _, c := range [][3]int{{3, 1, 4}, {3, 1, 0}, {3, -1, 1}, {3, 4, 1}, {0, 0, 0}} {
		if got := PassAtK(c[0], c[1], c[2]); !math.IsNaN(got) {
			t.Errorf("PassAtK(%d, %d, %d) = %v, want NaN (undefined)", c[0], c[1], c[2], got)
		}
	}
}

// The product form agrees with the definition 1 - C(n-c, k)/C(n, k) computed
// in exact rational arithmetic.
func TestPassAtKMatchesBinomialDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	for range 2000 {
		n := 1 + rng.IntN(300)
		k := 1 + rng.IntN(n)
		c := rng.IntN(n + 1)
		want := new(big.Rat).SetFrac(new(big.Int).Binomial(int64(n-c), int64(k)), new(big.Int).Binomial(int64(n), int64(k)))
		want.Sub(big.NewRat(1, 1), want)
		w, _ := want.Float64()
		got := PassAtK(n, c, k)
		if math.Abs(got-w) > 1e-12 || got < 0 || got > 1 {
			t.Fatalf("PassAtK(%d, %d, %d) = %.17g, want %.17g", n, c, k, got, w)
		}
	}
}

func TestSummarizeTasksEqualWeightsIsSampleSE(t *testing.T) {
	scores := []float64{0.2, 0.9, 0.55, 1, 0, 0.7}
	var ts []TaskScore
	for _, s := range scores {
		ts = append(ts, TaskScore{Score: s})
	}
	got, err := SummarizeTasks(ts)
	if err != nil {
		t.Fatal(err)
	}
	want := Summarize(scores)
	near(t, "mean", got.Mean, want.Mean, 1e-15)
	near(t, "se", got.SE, want.SD/math.Sqrt(6), 1e-15)
	if got.Tasks != 6 || got.CI95 == nil {
		t.Fatalf("got %+v, want 6 tasks and an interval", got)
	}
	lo, hi, _ := BoundedCI95(got.Mean, got.SE, 6)
	if *got.CI95 != [2]float64{lo, hi} {
		t.Errorf("CI95 = %v, want BoundedCI95's [%v %v]", *got.CI95, lo, hi)
	}
}

// By hand: scores 0.2, 0.6, 1 with weights 1, 2, 1. Σw = 4, m = (0.2 + 1.2 +
// 1)/4 = 0.6; Σ w²(t-m)² = 0.16 + 0 + 0.16 = 0.32; SE = sqrt(3/2 · 0.32)/4 =
// sqrt(0.48)/4.
func TestSummarizeTasksWeighted(t *testing.T) {
	ts := []TaskScore{{Score: 0.2}, {Score: 0.6, Weight: 2}, {Score: 1, Weight: 1}}
	got, err := SummarizeTasks(ts)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "mean", got.Mean, 0.6, 1e-15)
	near(t, "se", got.SE, math.Sqrt(0.48)/4, 1e-15)
	// Scaling every weight changes nothing.
	for i := range ts {
		if ts[i].Weight == 0 {
			ts[i].Weight = 1
		}
		ts[i].Weight *= 7
	}
	scaled, _ := SummarizeTasks(ts)
	near(t, "scaled mean", scaled.Mean, got.Mean, 1e-15)
	near(t, "scaled se", scaled.SE, got.SE, 1e-15)
}

// Trials are averaged within a task before the SE is taken across tasks:
// two tasks, one always solved and one never, with 10 trials each, have the
// SE of two units (0.5), not of 20 trials (0.11).
func TestSummarizeTasksClustersTrials(t *testing.T) {
	got, _ := SummarizeTasks([]TaskScore{{Score: 1}, {Score: 0}})
	near(t, "se", got.SE, 0.5, 1e-15)
	trialSE := Summarize([]float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}).SD / math.Sqrt(20)
	if got.SE < 4*trialSE {
		t.Errorf("clustered SE %v should far exceed the trial-level %v", got.SE, trialSE)
	}
}

func TestSummarizeTasksEdgeCases(t *testing.T) {
	one, err := SummarizeTasks([]TaskScore{{Score: 0.4, Weight: 3}})
	if err != nil || one.Tasks != 1 || one.Mean != 0.4 || one.SE != 0 || one.CI95 != nil {
		t.Errorf("one task: %+v, %v; want mean 0.4, no SE and no interval", one, err)
	}
	// Every task passed: no spread, but 3 of 3 leaves much open: the
	// Wilson interval of 3 successes in 3, with t(0.975, 2) for z, whose
	// lower end is n/(n+z²).
	same, _ := SummarizeTasks([]TaskScore{{Score: 1, Weight: 0.1}, {Score: 1, Weight: 0.7}, {Score: 1, Weight: 0.2}})
	z := 4.302652729749464
	if same.Mean != 1 || same.SE != 0 || same.CI95 == nil || math.Abs(same.CI95[0]-3/(3+z*z)) > 1e-12 || same.CI95[1] != 1 {
		t.Errorf("all ones: %+v (%v), want mean 1, SE 0, interval [%v 1]", same, same.CI95, 3/(3+z*z))
	}
	for name, ts := range map[string][]TaskScore{
		"none":            nil,
		"score above 1":   {{Score: 1.2}},
		"negative score":  {{Score: -0.1}},
		"NaN score":       {{Score: math.NaN()}},
		"negative weight": {{Score: 0.5, Weight: -1}},
		"NaN weight":      {{Score: 0.5, Weight: math.NaN()}},
		"infinite weight": {{Score: 0.5, Weight: math.Inf(1)}},
	} {
		if _, err := SummarizeTasks(ts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The result does not depend on the tasks' order, bit for bit.
func TestSummarizeTasksOrderInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 2))
	for range 200 {
		ts := make([]TaskScore, 2+rng.IntN(30))
		for i := range ts {
			ts[i] = TaskScore{Score: rng.Float64(), Weight: float64(rng.IntN(4))}
		}
		a, _ := SummarizeTasks(ts)
		rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		b, _ := SummarizeTasks(ts)
		if a.Mean != b.Mean || a.SE != b.SE || *a.CI95 != *b.CI95 {
			t.Fatalf("order changed the result: %+v vs %+v", a, b)
		}
	}
}

// 0/1 data, 3 successes of 5: se = sqrt(0.3/5) (sample variance 0.3), so
// n_eff = 0.24/0.06 = 4, and the interval is the Wilson interval of 0.6 with
// 4 trials and t_{0.975,4} = 2.7764451051977987 for z. Reference from the
// Wilson formula in Python: centre (p + a/2)/(1 + a), half-width
// sqrt(a·p(1-p) + a²/4)/(1 + a), a = t²/n.
func TestBoundedCI95Bernoulli(t *testing.T) {
	s := Summarize([]float64{1, 0, 1, 0, 1})
	se := s.SD / math.Sqrt(5)
	lo, hi, ok := BoundedCI95(s.Mean, se, 5)
	if !ok {
		t.Fatal("no interval")
	}
	near(t, "lo", lo, 0.13124361671846008, 1e-12)
	near(t, "hi", hi, 0.93708195250867, 1e-12)
	// The same as the shared Wilson formula with n = 4 and t for z ...
	w := wilsonInterval(0.6, 4, tQuantile(0.975, 4))
	near(t, "wilson lo", lo, w[0], 1e-12)
	near(t, "wilson hi", hi, w[1], 1e-12)
	// ... wider than the ordinary Wilson interval of 3/5 ...
	if o := wilson95(3, 5); lo >= o[0] || hi <= o[1] {
		t.Errorf("[%v %v] should contain the ordinary Wilson interval %v", lo, hi, o)
	}
	// ... and inside [0, 1] where the t-interval [-0.080, 1.280] is not.
	if s.CI95[0] >= 0 || s.CI95[1] <= 1 {
		t.Errorf("t-interval %v was expected to leave [0, 1]", s.CI95)
	}
}

func TestBoundedCI95NoSpreadAndRefusals(t *testing.T) {
	for _, m := range []float64{0.3, 0.5, 0.97} {
		if lo, hi, ok := BoundedCI95(m, 0, 4); !ok || lo != m || hi != m {
			t.Errorf("BoundedCI95(%v, 0, 4) = %v, %v, %v; want [m, m]", m, lo, hi, ok)
		}
	}
	// At a bound, no spread is 0/1 data all alike: the Wilson interval of 0
	// (or 4) in 4, z = t(0.975, 3); its inner end is z²/(n+z²) from the bound.
	z := 3.182446305284263
	inner := z * z / (4 + z*z)
	if lo, hi, ok := BoundedCI95(0, 0, 4); !ok || lo != 0 || math.Abs(hi-inner) > 1e-12 {
		t.Errorf("BoundedCI95(0, 0, 4) = %v, %v, %v; want [0, %v]", lo, hi, ok, inner)
	}
	if lo, hi, ok := BoundedCI95(1, 0, 4); !ok || hi != 1 || math.Abs(lo-(1-inner)) > 1e-12 {
		t.Errorf("BoundedCI95(1, 0, 4) = %v, %v, %v; want [%v, 1]", lo, hi, ok, 1-inner)
	}
	for _, c := range []struct {
		m, se float64
		units int
	}{
		{0.5, 0.1, 1}, {0.5, 0.1, 0}, {0.5, 0, 1}, // fewer than two units
		{-0.1, 0.1, 5}, {1.1, 0.1, 5}, {math.NaN(), 0.1, 5},
		{0.5, -0.1, 5}, {0.5, math.NaN(), 5}, {0.5, math.Inf(1), 5},
		{0, 0.1, 5}, {1, 0.1, 5}, // spread with a mean at a bound
	} {
		if _, _, ok := BoundedCI95(c.m, c.se, c.units); ok {
			t.Errorf("BoundedCI95(%v, %v, %d) gave an interval", c.m, c.se, c.units)
		}
	}
}

// Far from the bounds with many units it is the t-interval: at mean 1/2 the
// half-width is t·se/sqrt(1 + t²/n_eff), within 1% at n = 200.
func TestBoundedCI95NearTIntervalAtManyUnits(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 3))
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = rng.Float64()
	}
	// Centre the sample on 1/2 exactly by reflecting half of it.
	for i := 100; i < 200; i++ {
		xs[i] = 1 - xs[i-100]
	}
	s := Summarize(xs)
	se := s.SD / math.Sqrt(200)
	lo, hi, ok := BoundedCI95(s.Mean, se, 200)
	if !ok {
		t.Fatal("no interval")
	}
	th := (s.CI95[1] - s.CI95[0]) / 2
	if h := (hi - lo) / 2; math.Abs(h-th) > 0.02*th {
		t.Errorf("half-width %v, t-interval's %v: more than 2%% apart", h, th)
	}
	near(t, "centre", (lo+hi)/2, s.Mean, 1e-12)
}

// Over random samples of scores in [0, 1], of 0/1 outcomes and of mixtures:
// the interval lies in [0, 1], holds the mean, mirrors under x → 1-x, and
// widens with se.
func TestBoundedCI95Properties(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 4))
	for range 5000 {
		n := 2 + rng.IntN(40)
		xs := make([]float64, n)
		kind := rng.IntN(3)
		for i := range xs {
			switch kind {
			case 0:
				xs[i] = rng.Float64()
			case 1:
				xs[i] = float64(rng.IntN(2))
			default:
				xs[i] = float64(rng.IntN(5)) / 4
			}
		}
		s := Summarize(xs)
		se := s.SD / math.Sqrt(float64(n))
		lo, hi, ok := BoundedCI95(s.Mean, se, n)
		if !ok {
			t.Fatalf("%v: no interval", xs)
		}
		if lo < 0 || hi > 1 || lo > s.Mean || hi < s.Mean {
			t.Fatalf("%v: [%v %v] outside [0, 1] or misses the mean %v", xs, lo, hi, s.Mean)
		}
		if se == 0 {
			continue
		}
		mlo, mhi, _ := BoundedCI95(1-s.Mean, se, n)
		if math.Abs(mlo-(1-hi)) > 1e-12 || math.Abs(mhi-(1-lo)) > 1e-12 {
			t.Fatalf("%v: [%v %v] does not mirror [%v %v]", xs, lo, hi, mlo, mhi)
		}
		wlo, whi, _ := BoundedCI95(s.Mean, se*1.5, n)
		if wlo > lo+1e-12 || whi < hi-1e-12 {
			t.Fatalf("%v: larger se gave [%v %v], not containing [%v %v]", xs, wlo, whi, lo, hi)
		}
	}
}
