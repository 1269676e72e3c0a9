package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The interval's coverage, by simulation: n samples from a known
// distribution (exponential, mean 1 ms, recorded in ns at reactorlab's
// precision), the true percentile inside the 95% interval in 93–97% of
// 1,000 trials (the estimate's standard error is 0.7%), for p50, p99 and
// p99.9 at several n.
func TestIntervalCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 trials of up to 10,000 samples for each of six rows (about 5 s): the full tier")
	}
	const trials, mean = 1000, 1e6
	rng := rand.New(rand.NewPCG(27, 2026))
	h := hdrhistogram.New(1, 60e9, 3)
	for _, tc := range []struct {
		p float64
		n int
	}{{50, 200}, {50, 5000}, {99, 1000}, {99, 5000}, {99.9, 3000}, {99.9, 10000}} {
		truth := -mean * math.Log(1-tc.p/100)
		covered := 0
		for range trials {
			h.Reset()
			for range tc.n {
				h.RecordValue(int64(rng.ExpFloat64() * mean))
			}
			iv := PercentileInterval(h, tc.p)
			if iv.TooFew {
				t.Fatalf("p%v of %d samples: no interval (needs %d)", tc.p, tc.n, iv.Need)
			}
			if iv.LoUs*1e3 <= truth && truth <= iv.HiUs*1e3 {
				covered++
			}
		}
		share := float64(covered) / trials
		t.Logf("p%v, n = %d: the true %.0f ns inside the interval in %.1f%% of %d trials", tc.p, tc.n, truth, 100*share, trials)
		if share < 0.93 || share > 0.97 {
			t.Errorf("p%v, n = %d: coverage %.1f%%, want 93–97%%", tc.p, tc.n, 100*share)
		}
	}
}

// Below Need samples there is no interval, from Need on there is: at
// p99.9 of 300 probes the figure is in effect the maximum.
func TestIntervalNeedsEnoughSamples(t *testing.T) {
	for _, p := range []float64{50, 90, 99, 99.9, 99.99} {
		need := samplesFor(p / 100)
		if _, _, ok := orderStatistics(need, p/100); !ok {
			t.Errorf("p%v: no interval at n = Need = %d", p, need)
		}
		if _, _, ok := orderStatistics(need-1, p/100); ok {
			t.Errorf("p%v: an interval at n = %d, below Need %d", p, need-1, need)
		}
		t.Logf("p%v needs n ≥ %d", p, need)
	}
	h := hdrhistogram.New(1, 60e9, 3)
	for i := range 300 {
		h.RecordValue(int64(1000 + i))
	}
	iv := PercentileInterval(h, 99.9)
	if !iv.TooFew || iv.Need != samplesFor(0.999) {
		t.Errorf("p99.9 of 300 samples: %+v, want too few, needing %d", iv, samplesFor(0.999))
	}
	if iv := PercentileInterval(h, 50); iv.TooFew || iv.LoUs > 1.150 || iv.HiUs < 1.150 {
		t.Errorf("p50 of 1000..1299 ns: %v, want an interval around 1.15 µs", iv)
	}
}

// binomCDF against the sum of the probability mass, term by term.
func TestBinomCDF(t *testing.T) {
	for _, tc := range []struct {
		n int64
		p float64
	}{{10, 0.5}, {50, 0.01}, {300, 0.999}, {1000, 0.99}} {
		sum := 0.0
		for k := int64(0); k < tc.n; k++ {
			lc, _ := math.Lgamma(float64(tc.n + 1))
			lk, _ := math.Lgamma(float64(k + 1))
			lnk, _ := math.Lgamma(float64(tc.n - k + 1))
			sum += math.Exp(lc - lk - lnk + float64(k)*math.Log(tc.p) + float64(tc.n-k)*math.Log1p(-tc.p))
			if got := binomCDF(k, tc.n, tc.p); math.Abs(got-sum) > 1e-9 {
				t.Fatalf("binomCDF(%d, %d, %v) = %v, summed %v", k, tc.n, tc.p, got, sum)
			}
		}
	}
}

// Correlated samples, by simulation: an AR(1) process (lag-1 correlation
// ρ, standard normal marginal) mapped through exp to latencies, so every
// percentile's truth is known. Its consecutive samples fail the
// independence gate; the interval computed as if they were independent
// covers the truth in fewer than 93% of trials (down to 37%), and the interval thinned by
// the gate's k (ThinningFor over blocks of 256, as the load generator logs
// them, and the AR(1) factor of its lag-1 correlation: IntervalThinning)
// covers it in at least 93% (measured: 95.5–100%).
func TestThinnedIntervalCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("200 trials of 10,000 correlated samples for each of four rows (about 7 s): the full tier")
	}
	const trials, n, block = 200, 10000, 256
	rng := rand.New(rand.NewPCG(28, 2026))
	h := hdrhistogram.New(1, 60e9, 3)
	xs := make([]float64, n)
	for _, tc := range []struct {
		rho float64
		p   float64
	}{{0.6, 50}, {0.6, 99}, {0.9, 50}, {0.9, 99}} {
		z := map[float64]float64{50: 0, 99: 2.3263478740408408}[tc.p]
		truth := math.Exp(z) * 1e5
		var plain, thinned int
		ks := map[int]int{}
		for range trials {
			h.Reset()
			x := rng.NormFloat64()
			for i := range xs {
				x = tc.rho*x + math.Sqrt(1-tc.rho*tc.rho)*rng.NormFloat64()
				xs[i] = math.Exp(x) * 1e5
				h.RecordValue(int64(xs[i]))
			}
			var runs [][]float64
			for i := 0; i+block <= n; i += block {
				runs = append(runs, xs[i:i+block])
			}
			if !LagDependence(runs, 1).Fails() {
				t.Fatalf("ρ %v: the samples pass the independence gate", tc.rho)
			}
			k := IntervalThinning(runs)
			ks[k]++
			inside := func(iv Interval) bool { return !iv.TooFew && iv.LoUs*1e3 <= truth && truth <= iv.HiUs*1e3 }
			if inside(PercentileInterval(h, tc.p)) {
				plain++
			}
			if inside(ThinnedInterval(h, tc.p, k)) {
				thinned++
			}
		}
		ps, ts := float64(plain)/trials, float64(thinned)/trials
		t.Logf("ρ %v, p%v: covered %.1f%% as independent, %.1f%% thinned (k: %v)", tc.rho, tc.p, 100*ps, 100*ts, ks)
		if ps >= 0.93 {
			t.Errorf("ρ %v, p%v: the unthinned interval covers %.1f%%: the input is not correlated enough to show anything", tc.rho, tc.p, 100*ps)
		}
		if ts < 0.93 {
			t.Errorf("ρ %v, p%v: the thinned interval covers %.1f%%, want ≥ 93%%", tc.rho, tc.p, 100*ts)
		}
	}
}

// A thinned interval needs k times the samples, says so, and without a
// thinning (ThinningUnknown) there is none.
func TestThinnedIntervalText(t *testing.T) {
	h := hdrhistogram.New(1, 60e9, 3)
	for i := range 5000 {
		h.RecordValue(int64(1000 + i))
	}
	if iv := ThinnedInterval(h, 99.9, 1); iv.TooFew || iv != PercentileInterval(h, 99.9) {
		t.Errorf("k = 1: %+v, want PercentileInterval's", iv)
	}
	iv := ThinnedInterval(h, 99.9, 4)
	if !iv.TooFew || iv.Need != 4*2995 || iv.TooFewText() != "too few: n < 11,980 (correlated: every 4th counts)" {
		t.Errorf("k = 4 at p99.9 of 5,000: %+v %q", iv, iv.TooFewText())
	}
	wide, plain := ThinnedInterval(h, 50, 4), PercentileInterval(h, 50)
	if wide.TooFew || wide.LoUs > plain.LoUs || wide.HiUs < plain.HiUs || wide.HiUs-wide.LoUs < 1.5*(plain.HiUs-plain.LoUs) {
		t.Errorf("k = 4 at p50: %v, not about twice as wide as %v", wide, plain)
	}
	if iv := ThinnedInterval(h, 50, ThinningUnknown); !iv.TooFew || iv.TooFewText() != "no interval: samples correlated beyond 64 apart" {
		t.Errorf("unknown thinning: %+v %q", iv, iv.TooFewText())
	}
}
