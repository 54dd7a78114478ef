package scoring

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/forge-run/forge/record"
	"gonum.org/v1/gonum/stat/distuv"
)

// Student's sleep data (Cushny & Peebles), extra hours of sleep under two
// drugs for the same ten patients, as in R's datasets::sleep.
var sleepDrug1 = []float64{0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0}
var sleepDrug2 = []float64{1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4}

// R: t.test(extra ~ group, data = sleep, paired = TRUE) gives t = -4.0621,
// df = 9, p-value = 0.002833, 95% CI -2.4598858 -0.7001142, mean difference
// -1.58. By hand: d = -1.2 -2.4 -1.3 -1.3 0 -1 -1.8 -0.8 -4.6 -1.4, mean
// -1.58, sd 1.229995, t = -1.58/(1.229995/√10).
func TestPairedTSleepData(t *testing.T) {
	r, err := ComparePaired(sleepDrug1, sleepDrug2)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "mean difference", r.MeanDifference, -1.58, 1e-12)
	if r.DifferenceCI95 == nil {
		t.Fatal("no interval")
	}
	near(t, "ci lo", r.DifferenceCI95[0], -2.4598858, 1e-7)
	near(t, "ci hi", r.DifferenceCI95[1], -0.7001142, 1e-7)
	d := make([]float64, len(sleepDrug1))
	for i := range d {
		d[i] = sleepDrug1[i] - sleepDrug2[i]
	}
	st, p := pairedT(summarize(d))
	if st == nil {
		t.Fatal("no t statistic")
	}
	near(t, "t", *st, -4.0621, 5e-5)
	near(t, "p", p, 0.002833, 5e-7)
	if r.N != 10 || r.WinLoss != (record.WinLoss{Wins: 0, Losses: 9, Ties: 1}) {
		t.Errorf("n %d, %+v; want 10 pairs, 0 wins, 9 losses, 1 tie", r.N, r.WinLoss)
	}
}

// The same ten pairs have fewer than 30 pairs, so the p-value is Wilcoxon's:
// the zero difference dropped, 9 negative differences (two tied at 1.3),
// W+ = 0. Exact given the ties: only the all-negative sign pattern reaches
// 0, so p = 2/2^9. R's wilcox.test (which switches to the normal
// approximation with ties) reports V = 0, p-value = 0.009091; our normal
// approximation agrees: variance 9·10·19/24 - (2³-2)/48 = 71.125,
// z = (0 - 22.5 + 0.5)/√71.125, p = 2Φ(z) = 0.009090698015925103 (Python
// statistics.NormalDist).
func TestWilcoxonSleepData(t *testing.T) {
	r, _ := ComparePaired(sleepDrug1, sleepDrug2)
	if r.Method != MethodWilcoxon || r.Statistic == nil || *r.Statistic != 0 {
		t.Fatalf("got %+v, want Wilcoxon with W+ = 0", r)
	}
	near(t, "exact p", r.PValue, 2.0/512, 1e-15)
	if !r.Significant || r.NormalityP != nil {
		t.Errorf("got %+v, want significant, no normality test below 30 pairs", r)
	}
	_, _, ties := signedRanks(func() []float64 {
		d := make([]float64, len(sleepDrug1))
		for i := range d {
			d[i] = sleepDrug1[i] - sleepDrug2[i]
		}
		return d
	}())
	near(t, "normal approximation p", wilcoxonNormalP(9, ties, 0), 0.009090698015925103, 1e-12)
}

// R's ?wilcox.test example (Hollander & Wolfe 1973, p. 29f.): Hamilton
// depression scale before (x) and after (y) a tranquilizer.
// wilcox.test(x, y, paired = TRUE, alternative = "greater") gives V = 40,
// p-value = 0.01953 = 10/512 (W- = 5: the subsets of 1..9 summing to at most 5
// number 10); two-sided 20/512.
func TestWilcoxonDepressionData(t *testing.T) {
	x := []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}
	y := []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}
	r, err := ComparePaired(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if r.Method != MethodWilcoxon || r.Statistic == nil || *r.Statistic != 40 {
		t.Fatalf("got %+v, want Wilcoxon with W+ = 40", r)
	}
	near(t, "p", r.PValue, 20.0/512, 1e-15)
	if !r.Significant || r.WinLoss != (record.WinLoss{Wins: 7, Losses: 2}) {
		t.Errorf("got %+v, want significant, 7 wins and 2 losses", r)
	}
}

// bruteWilcoxonP computes the exact two-sided signed-rank p-value without
// signedRanks or the dynamic programme: midranks by counting, then every
// one of the 2^n sign patterns.
func bruteWilcoxonP(d []float64) (w, p float64) {
	var nz []float64
	for _, x := range d {
		if math.Abs(x) > 1e-9 {
			nz = append(nz, x)
		}
	}
	n := len(nz)
	rank := make([]float64, n)
	for i := range nz {
		less, same := 0, 0
		for j := range nz {
			switch diff := math.Abs(nz[j]) - math.Abs(nz[i]); {
			case math.Abs(diff) <= 1e-9:
				same++
			case diff < 0:
				less++
			}
		}
		rank[i] = float64(less) + float64(same+1)/2
		if nz[i] > 0 {
			w += rank[i]
		}
	}
	var le, ge int
	for mask := 0; mask < 1<<n; mask++ {
		var s float64
		for i := range n {
			if mask&(1<<i) != 0 {
				s += rank[i]
			}
		}
		if s <= w+1e-9 {
			le++
		}
		if s >= w-1e-9 {
			ge++
		}
	}
	return w, math.Min(1, 2*float64(min(le, ge))/float64(int(1)<<n))
}

// n = 10, W+ = 8: 25 of the 1024 sign patterns have W+ ≤ 8, so the exact
// two-sided p is 50/1024 = 0.048828125 (the lower tail counts by sum
// 0..8 are 1 1 1 2 2 3 4 5 6), checked here by enumeration too.
func TestWilcoxonExactN10(t *testing.T) {
	d := []float64{1, -2, -3, -4, -5, -6, 7, -8, -9, -10} // W+ = 1 + 7
	w, p := bruteWilcoxonP(d)
	if w != 8 || p != 0.048828125 {
		t.Fatalf("enumeration: W+ = %v, p = %v; want 8, 0.048828125", w, p)
	}
	r, _ := ComparePaired(d, make([]float64, 10))
	if *r.Statistic != 8 || r.PValue != 0.048828125 || !r.Significant {
		t.Errorf("got %+v, want W+ = 8, p = 0.048828125, significant", r)
	}
	// Rank 2 turned positive as well is no longer significant: 43 patterns
	// have W+ ≤ 10 (counts by sum 0..10: 1 1 1 2 2 3 4 5 6 8 10), p = 86/1024.
	d[1] = 2
	if w, p := bruteWilcoxonP(d); w != 10 || p != 86.0/1024 {
		t.Fatalf("enumeration: W+ = %v, p = %v; want 10, 86/1024", w, p)
	}
	r, _ = ComparePaired(d, make([]float64, 10))
	if *r.Statistic != 10 || r.PValue != 86.0/1024 || r.Significant {
		t.Errorf("got %+v, want W+ = 10, p = 86/1024, not significant", r)
	}
}

// A solves 5 tasks that B fails, the rest equal: five tied differences of
// 1. Exact given the ties p = 2/2^5; the normal approximation would give
// 0.036888425707049866 (variance 13.75 - 120/48 = 11.25, z = 7/√11.25;
// Python statistics.NormalDist) and call it significant.
func TestWilcoxonAllTiedWins(t *testing.T) {
	a := []float64{1, 1, 1, 1, 1, 0.5, 0.25, 0}
	b := []float64{0, 0, 0, 0, 0, 0.5, 0.25, 0}
	r, _ := ComparePaired(a, b)
	if r.Method != MethodWilcoxon || r.PValue != 0.0625 || r.Significant {
		t.Errorf("got %+v, want Wilcoxon p = 0.0625, not significant", r)
	}
	if r.WinLoss != (record.WinLoss{Wins: 5, Ties: 3}) || *r.Statistic != 15 {
		t.Errorf("got %+v, want 5 wins, 3 ties, W+ = 15", r)
	}
	near(t, "normal approximation", wilcoxonNormalP(5, []int{5}, 15), 0.036888425707049866, 1e-12)
}

// Above 50 non-zero differences, the normal approximation with tie and
// continuity correction. d = (i-20)/100, i = 1..60: one zero dropped, 59
// left, |d| = 0.01..0.19 tied in pairs. Reference from Python: midranks by
// counting, W+ = 1399.5, variance 59·60·119/24 - 19·6/48 = 17550.125,
// z = (1399.5 - 885 - 0.5)/√17550.125, p = 2(1 - Φ(z)) = 0.00010448990172284844.
func TestWilcoxonNormalApproximation(t *testing.T) {
	d := make([]float64, 60)
	for i := range d {
		d[i] = float64(i+1-20) / 100
	}
	w, p := wilcoxon(d)
	if w == nil || *w != 1399.5 {
		t.Fatalf("W+ = %v, want 1399.5", w)
	}
	near(t, "p", p, 0.00010448990172284844, 1e-12)
	// Within 1/2 of the mean the continuity correction leaves nothing.
	if p := wilcoxonNormalP(60, nil, 60*61/4.0+0.4); p != 1 {
		t.Errorf("p = %v at W+ 0.4 from its mean, want 1", p)
	}
}

// 40 differences at the normal scores 0.05 + 0.1·Φ⁻¹((i-0.5)/40) pass the
// normality test and take the paired t branch. References from Python:
// Jarque–Bera JB = 0.16543675902467558, p = exp(-JB/2) = 0.920610373459022;
// mean 0.05, sd 0.09968023608440381, t = 3.1724219207213102; p =
// 0.002944805430055486 by Simpson integration of the t(39) density (200 000
// steps); t(0.975, 39) = 2.0226909200367094 by bisection on that, giving the
// interval [0.01812071391221487, 0.08187928608778515].
func TestPairedTBranch(t *testing.T) {
	d := make([]float64, 40)
	for i := range d {
		d[i] = 0.05 + 0.1*distuv.UnitNormal.Quantile((float64(i)+0.5)/40)
	}
	r, err := ComparePaired(d, make([]float64, 40))
	if err != nil {
		t.Fatal(err)
	}
	if r.Method != MethodPairedT || r.NormalityP == nil || r.Statistic == nil {
		t.Fatalf("got %+v, want paired t with a normality p", r)
	}
	near(t, "normality p", *r.NormalityP, 0.920610373459022, 1e-9)
	near(t, "t", *r.Statistic, 3.1724219207213102, 1e-9)
	near(t, "p", r.PValue, 0.002944805430055486, 1e-9)
	near(t, "ci lo", r.DifferenceCI95[0], 0.01812071391221487, 1e-9)
	near(t, "ci hi", r.DifferenceCI95[1], 0.08187928608778515, 1e-9)
	if !r.Significant || r.Wins+r.Losses+r.Ties != 40 {
		t.Errorf("got %+v, want significant over 40 pairs", r)
	}
}

// 40 skewed differences (exponential scores 0.1·-ln(1-(i-0.5)/40)) fail the
// normality test: JB = 27.237027125943108, p = 1.2177403813816994e-06
// (Python), so Wilcoxon; all 40 positive, exact p = 2/2^40.
func TestNonNormalDifferencesUseWilcoxon(t *testing.T) {
	d := make([]float64, 40)
	for i := range d {
		d[i] = -0.1 * math.Log(1-(float64(i)+0.5)/40)
	}
	r, _ := ComparePaired(d, make([]float64, 40))
	if r.Method != MethodWilcoxon || r.NormalityP == nil {
		t.Fatalf("got %+v, want Wilcoxon after a normality test", r)
	}
	near(t, "normality p", *r.NormalityP, 1.2177403813816994e-06, 1e-12)
	if r.PValue != math.Ldexp(2, -40) || *r.Statistic != 820 {
		t.Errorf("p = %v, W+ = %v; want 2^-39 and 820", r.PValue, *r.Statistic)
	}
}

func TestComparePairedDegenerate(t *testing.T) {
	t.Run("all differences zero", func(t *testing.T) {
		for _, n := range []int{1, 5, 40} {
			a := make([]float64, n)
			b := make([]float64, n)
			for i := range a {
				a[i], b[i] = 0.5, 0.5+1e-12
			}
			r, _ := ComparePaired(a, b)
			if r.PValue != 1 || r.Significant || r.Ties != n || r.Statistic != nil {
				t.Errorf("n %d: got %+v, want p = 1, not significant, all ties", n, r)
			}
		}
	})
	t.Run("identical non-zero differences, 30 pairs", func(t *testing.T) {
		a := make([]float64, 30)
		b := make([]float64, 30)
		for i := range a {
			a[i], b[i] = 0.75, 0.5
		}
		r, _ := ComparePaired(a, b)
		if r.Method != MethodPairedT || r.PValue != 0 || !r.Significant || r.Statistic != nil ||
			r.NormalityP != nil || *r.DifferenceCI95 != [2]float64{0.25, 0.25} {
			t.Errorf("got %+v, want paired t with p = 0 and interval [0.25 0.25]", r)
		}
	})
	t.Run("one pair", func(t *testing.T) {
		r, _ := ComparePaired([]float64{1}, []float64{0})
		if r.PValue != 1 || r.Significant || r.DifferenceCI95 != nil || r.Wins != 1 {
			t.Errorf("got %+v, want p = 1 and no interval", r)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for name, ab := range map[string][2][]float64{
			"lengths differ": {{1, 2}, {1}},
			"empty":          {nil, nil},
			"NaN":            {{1, math.NaN()}, {1, 2}},
			"Inf":            {{1, 2}, {math.Inf(-1), 2}},
		} {
			if _, err := ComparePaired(ab[0], ab[1]); err == nil {
				t.Errorf("%s: no error", name)
			}
		}
	})
}

// Over random task scores (drawn from small sets so ties and zeros occur):
// the exact Wilcoxon p equals enumeration; swapping A and B keeps p and the
// method, swaps wins and losses and negates the difference; p is in [0, 1].
func TestComparePairedProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 5))
	for range 3000 {
		n := 1 + rng.IntN(14)
		if rng.IntN(4) == 0 {
			n = 30 + rng.IntN(40)
		}
		a := make([]float64, n)
		b := make([]float64, n)
		for i := range a {
			a[i] = float64(rng.IntN(9)) / 8
			b[i] = float64(rng.IntN(9)) / 8
			if rng.IntN(3) == 0 {
				b[i] = rng.Float64()
			}
		}
		r, err := ComparePaired(a, b)
		if err != nil {
			t.Fatal(err)
		}
		if !(r.PValue >= 0 && r.PValue <= 1) || r.Significant != (r.PValue < Alpha) {
			t.Fatalf("%v vs %v: %+v", a, b, r)
		}
		if r.Wins+r.Losses+r.Ties != n {
			t.Fatalf("%v vs %v: %+v does not count %d pairs", a, b, r, n)
		}
		s, _ := ComparePaired(b, a)
		if s.Method != r.Method || math.Abs(s.PValue-r.PValue) > 1e-12 || s.Wins != r.Losses ||
			s.Losses != r.Wins || math.Abs(s.MeanDifference+r.MeanDifference) > 1e-12 {
			t.Fatalf("%v vs %v: swapped %+v against %+v", a, b, s, r)
		}
		if n <= 14 {
			d := make([]float64, n)
			for i := range d {
				d[i] = a[i] - b[i]
			}
			w, p := bruteWilcoxonP(d)
			if r.Method != MethodWilcoxon || (r.Statistic != nil && math.Abs(*r.Statistic-w) > 1e-9) ||
				math.Abs(r.PValue-p) > 1e-12 {
				t.Fatalf("%v: got %+v, enumeration W+ = %v, p = %v", d, r, w, p)
			}
		}
	}
}

// Zeros (within 1e-9) are dropped; |differences| within 1e-9 share their
// average rank, so 0.1+0.2 (0.30000000000000004) ties with 0.3.
func TestSignedRanks(t *testing.T) {
	x := 0.1
	rank2, pos, ties := signedRanks([]float64{x + 0.2, -0.3, 0.5, 0, 1e-10, -0.05})
	if !reflect.DeepEqual(rank2, []int{2, 5, 5, 8}) || !reflect.DeepEqual(pos, []bool{false, false, true, true}) ||
		!reflect.DeepEqual(ties, []int{1, 2, 1}) {
		t.Errorf("rank2 %v, pos %v, ties %v; want [2 5 5 8], [false false true true], [1 2 1]", rank2, pos, ties)
	}
}

// The paired t-test needs 30 pairs: 29 normal-looking differences still get
// Wilcoxon, without a normality test; 30 get the t-test.
func TestPairedTNeedsThirtyPairs(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{20, MethodWilcoxon}, {29, MethodWilcoxon}, {30, MethodPairedT}} {
		d := make([]float64, c.n)
		for i := range d {
			d[i] = 0.05 + 0.1*distuv.UnitNormal.Quantile((float64(i)+0.5)/float64(c.n))
		}
		r, _ := ComparePaired(d, make([]float64, c.n))
		if r.Method != c.want || (r.NormalityP != nil) != (c.n >= 30) {
			t.Errorf("%d pairs: %+v, want %s", c.n, r, c.want)
		}
	}
}
