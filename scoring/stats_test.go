package scoring

import (
	"math"
	"testing"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.10g, want %.10g (±%g)", what, got, want, tol)
	}
}

// Student t quantiles as published by scipy.stats.t.ppf(0.975, df).
func TestTQuantileKnownValues(t *testing.T) {
	for _, c := range []struct{ df, want float64 }{
		{1, 12.706204736174698},
		{2, 4.302652729749464},
		{4, 2.7764451051977987},
		{9, 2.2621571628540993},
		{30, 2.0422724563012373},
	} {
		near(t, "t(0.975, df)", tQuantile(0.975, c.df), c.want, 1e-6)
	}
}

// Wilson score intervals: 8/10 from Newcombe (1998) / Brown, Cai &
// DasGupta (2001) worked examples; the extremes by the closed form z²/(n+z²).
func TestWilsonKnownValues(t *testing.T) {
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{
		{8, 10, 0.4902, 0.9433},
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{81, 263, 0.2553, 0.3662}, // Newcombe's example 81/263
	} {
		ci := wilson95(c.k, c.n)
		near(t, "wilson lo", ci[0], c.lo, 5e-5)
		near(t, "wilson hi", ci[1], c.hi, 5e-5)
	}
	if ci := wilson95(0, 0); ci != [2]float64{0, 1} {
		t.Errorf("wilson95(0, 0) = %v, want [0 1] (no information)", ci)
	}
}

// R's t.test(extra ~ group, data = sleep), Welch: t = -1.8608,
// df = 17.776, p-value = 0.07939, 95% CI -3.3654832 0.2054832.
func TestWelchSleepData(t *testing.T) {
	g1 := []float64{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0}
	g2 := []float64{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4}
	r := compareMeans(summarize(g1), summarize(g2))
	if r.method != "welch-t" || r.t == nil || r.df == nil || r.p == nil || r.diffCI == nil {
		t.Fatalf("compareMeans = %+v, want a full Welch test", r)
	}
	near(t, "t", *r.t, -1.860813, 1e-5)
	near(t, "df", *r.df, 17.77647, 1e-4)
	near(t, "p", *r.p, 0.07939414, 1e-6)
	near(t, "ci lo", r.diffCI[0], -3.3654832, 1e-6)
	near(t, "ci hi", r.diffCI[1], 0.2054832, 1e-6)
	if r.clear {
		t.Error("p = 0.079 must not be a clear difference at alpha 0.05")
	}
	// Swapping the samples flips t and the interval, not p.
	s := compareMeans(summarize(g2), summarize(g1))
	near(t, "swapped p", *s.p, *r.p, 1e-12)
	near(t, "swapped t", *s.t, -*r.t, 1e-12)
}

func TestCompareMeansEdgeCases(t *testing.T) {
	one := func(x float64) summary { return summarize([]float64{x}) }
	t.Run("single trials differ", func(t *testing.T) {
		r := compareMeans(one(0.8), one(0.7))
		if r.method != "exact" || !r.clear || r.p != nil {
			t.Errorf("got %+v, want exact and clear without p", r)
		}
	})
	t.Run("single trials equal within 1e-9", func(t *testing.T) {
		if r := compareMeans(one(0.8), one(0.8+1e-10)); r.clear {
			t.Errorf("got %+v, want a tie", r)
		}
	})
	t.Run("zero variance different means", func(t *testing.T) {
		r := compareMeans(summarize([]float64{1, 1, 1}), summarize([]float64{0.5, 0.5, 0.5}))
		if !r.clear || r.p == nil || *r.p != 0 || r.t != nil {
			t.Errorf("got %+v, want p = 0, clear, no (infinite) t", r)
		}
	})
	t.Run("zero variance same means", func(t *testing.T) {
		r := compareMeans(summarize([]float64{1, 1}), summarize([]float64{1, 1, 1}))
		if r.clear || r.p == nil || *r.p != 1 {
			t.Errorf("got %+v, want p = 1, tie", r)
		}
	})
	t.Run("borrowed variance", func(t *testing.T) {
		a := summarize([]float64{0.5, 0.6, 0.7})
		r := compareMeans(a, one(0.2))
		if r.method != "t-borrowed-variance" || r.df == nil || *r.df != 2 || r.p == nil {
			t.Fatalf("got %+v", r)
		}
		// se = 0.1*sqrt(1/3+1) = 0.11547, t = 0.4/0.11547 = 3.4641, df 2:
		// two-sided p = 0.07418 (scipy.stats.t.sf(3.4641016, 2)*2).
		near(t, "p", *r.p, 0.0741799, 1e-6)
	})
}

func TestMeanCI95(t *testing.T) {
	s := summarize([]float64{5, 1, 4, 2, 3})
	near(t, "mean", s.mean, 3, 1e-12)
	near(t, "sd", s.sd, math.Sqrt(2.5), 1e-12)
	ci := meanCI95(s)
	half := 2.7764451051977987 * math.Sqrt(2.5) / math.Sqrt(5)
	near(t, "lo", ci[0], 3-half, 1e-9)
	near(t, "hi", ci[1], 3+half, 1e-9)
	if ci := meanCI95(summarize([]float64{0.4})); ci != [2]float64{0.4, 0.4} {
		t.Errorf("one value: ci = %v, want collapsed [0.4 0.4]", ci)
	}
	if s := summarize(nil); s.n != 0 || s.mean != 0 {
		t.Errorf("summarize(nil) = %+v", s)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0}, {[]float64{3}, 3}, {[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

func TestPText(t *testing.T) {
	p := func(f float64) *float64 { return &f }
	for _, c := range []struct {
		p    *float64
		want string
	}{
		{nil, "no test"}, {p(0.0004), "p < 0.001"}, {p(0.003), "p = 0.003"}, {p(0.31), "p = 0.31"},
		{p(0.0496), "p = 0.0496"}, {p(0.0503), "p = 0.05"},
	} {
		if got := pText(c.p); got != c.want {
			t.Errorf("pText(%v) = %q, want %q", c.p, got, c.want)
		}
	}
}
