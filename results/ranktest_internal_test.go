package results

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
