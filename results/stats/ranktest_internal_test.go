package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestNormalApproximationByHand: scipy.stats.mannwhitneyu's documentation
// example (U = 17, n1 = 5, n2 = 4, no ties): μ = 10, σ² = 5·4/12·10, so
// with the continuity correction z = 6.5/σ and p = erfc(z/√2) =
// 0.1113468865 (without it, z = 7/σ gives scipy's use_continuity=False
// value 0.0864107330).
func TestNormalApproximationByHand(t *testing.T) {
	males := []float64{19, 22, 16, 29, 24}
	females := []float64{20, 11, 17, 12}
	got := mannWhitney(males, females, 0)
	if got.Exact || got.U != 17 || math.Abs(got.P-0.1113468865) > 1e-9 {
		t.Errorf("got %+v, want U=17 P=0.1113468865 (normal)", got)
	}
}

// TestExactMatchesEnumeration: the counting recurrence gives the same p as
// enumerating every assignment of the pooled values to the two samples,
// ties included, on random small samples with many ties.
func TestExactMatchesEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n1, n2 := 1+rng.IntN(6), 1+rng.IntN(6)
		x, y := make([]float64, n1), make([]float64, n2)
		for i := range x {
			x[i] = float64(rng.IntN(5))
		}
		for i := range y {
			y[i] = float64(rng.IntN(5) + rng.IntN(2))
		}
		got := MannWhitney(x, y)
		want := enumerateP(x, y)
		if !got.Exact || math.Abs(got.P-want) > 1e-12 {
			t.Fatalf("x=%v y=%v: got %+v, enumeration p=%v", x, y, got, want)
		}
	}
}

// enumerateP is the two-sided permutation p of the U statistic, by brute
// force over all subsets.
func enumerateP(x, y []float64) float64 {
	pool := append(append([]float64{}, x...), y...)
	n1, n := len(x), len(pool)
	u := func(a, b []float64) float64 {
		s := 0.0
		for _, v := range a {
			for _, w := range b {
				switch {
				case v > w:
					s++
				case v == w:
					s += 0.5
				}
			}
		}
		return s
	}
	mean := float64(len(x)*len(y)) / 2
	dev := math.Abs(u(x, y) - mean)
	var hit, all float64
	for mask := 0; mask < 1<<n; mask++ {
		var a, b []float64
		for i := 0; i < n; i++ {
			if mask&(1<<i) != 0 {
				a = append(a, pool[i])
			} else {
				b = append(b, pool[i])
			}
		}
		if len(a) != n1 {
			continue
		}
		all++
		if math.Abs(u(a, b)-mean) >= dev-1e-9 {
			hit++
		}
	}
	return hit / all
}

// TestNormalApproximationTiesByHand: x = {1, 1, 2, 2}, y = {2, 2, 3, 3}
// (tie groups of 2, 4 and 2 in n = 8). U = 2 (the four x = y = 2 pairs
// count a half each), μ = 8, Σ(t³ − t) = 6 + 60 + 6 = 72, so with the tie
// correction σ² = 4·4/12·(9 − 72/56) = 72/7 and, with the continuity
// correction, z = 5.5/√(72/7), p = erfc(z/√2) = 0.0863587396 (without the
// tie correction σ² = 12 and p = 0.1123511977).
func TestNormalApproximationTiesByHand(t *testing.T) {
	got := mannWhitney([]float64{1, 1, 2, 2}, []float64{2, 2, 3, 3}, 0)
	if got.Exact || got.U != 2 || math.Abs(got.P-0.0863587396) > 1e-9 {
		t.Errorf("got %+v, want U=2 P=0.0863587396 (normal, tie-corrected)", got)
	}
}

// TestNormalApproximationLargeTied: samples too large for the exact
// distribution, with many ties, give the p of a direct implementation of
// the documented normal approximation: U by counting pairs (ties a half),
// mean n1·n2/2, variance n1·n2/12·((n+1) − Σ(t³ − t)/(n(n − 1))) over the
// tie groups' sizes t, continuity correction 0.5.
func TestNormalApproximationLargeTied(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 20; trial++ {
		n1, n2 := 50+rng.IntN(30), 50+rng.IntN(30)
		x, y := make([]float64, n1), make([]float64, n2)
		for i := range x {
			x[i] = float64(rng.IntN(6))
		}
		for i := range y {
			y[i] = float64(rng.IntN(6) + rng.IntN(2))
		}
		got := MannWhitney(x, y)

		u := 0.0
		groups := map[float64]float64{}
		for _, v := range x {
			groups[v]++
			for _, w := range y {
				switch {
				case v > w:
					u++
				case v == w:
					u += 0.5
				}
			}
		}
		for _, w := range y {
			groups[w]++
		}
		n := float64(n1 + n2)
		ties := 0.0
		for _, c := range groups {
			ties += c*c*c - c
		}
		mean := float64(n1*n2) / 2
		variance := float64(n1*n2) / 12 * ((n + 1) - ties/(n*(n-1)))
		z := math.Max(math.Abs(u-mean)-0.5, 0) / math.Sqrt(variance)
		want := math.Min(1, math.Erfc(z/math.Sqrt2))

		if got.Exact || got.U != u || math.Abs(got.P-want) > 1e-12*math.Max(1, want) {
			t.Fatalf("trial %d (n1 %d, n2 %d): got %+v, want normal approximation U=%v P=%v", trial, n1, n2, got, u, want)
		}
	}
}
