package stats_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/results/stats"
)

// TestMannWhitneyKnownValues: exact p-values from the permutation
// distribution (2/C(n1+n2, n1) for fully separated samples) and scipy's
// documentation example (exact p = 1/9).
func TestMannWhitneyKnownValues(t *testing.T) {
	for _, c := range []struct {
		name  string
		x, y  []float64
		u, p  float64
		exact bool
	}{
		{"3v3 separated", []float64{1, 2, 3}, []float64{4, 5, 6}, 0, 0.1, true},
		{"3v3 separated, reversed", []float64{4, 5, 6}, []float64{1, 2, 3}, 9, 0.1, true},
		{"5v5 separated", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0, 2.0 / 252, true},
		{"scipy example", []float64{19, 22, 16, 29, 24}, []float64{20, 11, 17, 12}, 17, 1.0 / 9, true},
		{"identical", []float64{7, 7, 7}, []float64{7, 7, 7, 7}, 6, 1, true},
		{"interleaved", []float64{1, 3, 5}, []float64{2, 4, 6}, 3, 0.7, true},
		{"empty x", nil, []float64{1, 2}, 0, 1, true},
		{"empty y", []float64{1, 2}, nil, 0, 1, true},
		{"NaN dropped", []float64{1, 2, 3, math.NaN()}, []float64{4, 5, 6}, 0, 0.1, true},
	} {
		got := stats.MannWhitney(c.x, c.y)
		if got.U != c.u || math.Abs(got.P-c.p) > 1e-12 || got.Exact != c.exact {
			t.Errorf("%s: got %+v, want U=%v P=%v exact=%v", c.name, got, c.u, c.p, c.exact)
		}
	}
}

// TestMannWhitneyTies: with ties the exact test uses mid-ranks. x = {1, 2,
// 2}, y = {2, 3, 3}: pooled 1,2,2,2,3,3 have doubled mid-ranks
// 2,6,6,6,11,11; x's doubled rank sum is 14, the mean 21. Of the C(6,3) = 20
// subsets of three, those as far from 21 are {2,6,6} (sum 14, three ways)
// and {6,11,11} (sum 28, three ways): p = 6/20.
func TestMannWhitneyTies(t *testing.T) {
	got := stats.MannWhitney([]float64{1, 2, 2}, []float64{2, 3, 3})
	if !got.Exact || math.Abs(got.P-0.3) > 1e-12 || got.U != 1 {
		t.Errorf("got %+v, want U=1 P=0.3 exact", got)
	}
}

// TestMannWhitneySymmetric: swapping the samples keeps P and mirrors U.
func TestMannWhitneySymmetric(t *testing.T) {
	x := []float64{3.1, 4, 4, 5.5, 9, 2}
	y := []float64{1, 4, 2.5, 2.5, 0.5, 3, 3.1, 7}
	a, b := stats.MannWhitney(x, y), stats.MannWhitney(y, x)
	if math.Abs(a.P-b.P) > 1e-12 || a.U+b.U != float64(len(x)*len(y)) {
		t.Errorf("x,y: %+v; y,x: %+v", a, b)
	}
}

// TestMannWhitneyLargeIsNormalAndFast: beyond the exact budget the normal
// approximation is used; a pooled baseline of 6 repeats × 12 cells against
// 6 runs stays exact and quick.
func TestMannWhitneyLargeIsNormalAndFast(t *testing.T) {
	seq := func(from, n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(from + i)
		}
		return v
	}
	big := stats.MannWhitney(seq(0, 200), seq(100, 200))
	if big.Exact || big.P > 1e-10 {
		t.Errorf("200 vs 200: %+v, want normal and tiny p", big)
	}
	start := time.Now()
	r := stats.MannWhitney(seq(0, 6), seq(3, 72))
	if el := time.Since(start); !r.Exact || el > 50*time.Millisecond {
		t.Errorf("6 vs 72: exact=%v in %v", r.Exact, el)
	}
}

// TestMinPValue: 2/C(n1+n2, n1), capped at 1, and 1 for an empty side.
func TestMinPValue(t *testing.T) {
	for _, c := range []struct {
		n1, n2 int
		want   float64
	}{{3, 3, 0.1}, {5, 5, 2.0 / 252}, {1, 1, 1}, {1, 2, 2.0 / 3}, {2, 2, 2.0 / 6}, {0, 5, 1}, {4, 0, 1}, {3, 30, 2.0 / 5456}} {
		if got := stats.MinPValue(c.n1, c.n2); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("MinPValue(%d, %d) = %v, want %v", c.n1, c.n2, got, c.want)
		}
	}
}

// TestHolmAdjust: the textbook example, order kept, monotone, capped at 1,
// and empty input.
func TestHolmAdjust(t *testing.T) {
	got := stats.HolmAdjust([]float64{0.04, 0.01, 0.03, 0.5})
	want := []float64{0.09, 0.04, 0.09, 0.5}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("HolmAdjust = %v, want %v", got, want)
		}
	}
	if got := stats.HolmAdjust([]float64{0.6, 0.7}); !slices.Equal(got, []float64{1, 1}) {
		t.Errorf("capping: %v", got)
	}
	if got := stats.HolmAdjust(nil); len(got) != 0 {
		t.Errorf("empty: %v", got)
	}
}
