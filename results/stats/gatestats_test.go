package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func expGaps(rng *rand.Rand, n int) []float64 {
	g := make([]float64, n)
	for i := range g {
		g[i] = rng.ExpFloat64()
	}
	return g
}

func TestFitExponentialRejectsOneInAHundredPoissonRunsAndEveryUniformOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 1000
	rejected, rejectedBlurred := 0, 0
	for range trials {
		g := expGaps(rng, 1000)
		if FitExponential(g, 0, 1000).Fails() {
			rejected++
		}
		// Below the resolution the generator places sends as it can: the
		// test must not see it.
		const r = 0.3
		for i, v := range g {
			if v < r {
				g[i] = math.Floor(v/0.1) * 0.1
			}
		}
		if FitExponential(g, r, 1000).Fails() {
			rejectedBlurred++
		}
	}
	// Binomial(1000, 0.01): mean 10, sd 3.1.
	for what, n := range map[string]int{"exponential gaps": rejected, "exponential gaps blurred below r": rejectedBlurred} {
		if n < 3 || n > 20 {
			t.Errorf("%s: %d of %d rejected, want about 1%% (3-20)", what, n, trials)
		}
	}
	uniform := make([]float64, 1000)
	for i := range uniform {
		uniform[i] = 2 * rng.Float64()
	}
	if f := FitExponential(uniform, 0, 1000); !f.Fails() {
		t.Errorf("uniform gaps of mean 1 pass: %v", f)
	}
	if f := FitExponential(expGaps(rng, 50), 0, 1000); f.Judged() {
		t.Errorf("50 gaps judged: %v", f)
	}
}

// poissonTimes is a Poisson process of rate 1 per unit over [0, span).
func poissonTimes(rng *rand.Rand, span float64, unit int64) []int64 {
	var ts []int64
	for t := rng.ExpFloat64(); t < span; t += rng.ExpFloat64() {
		ts = append(ts, int64(t*float64(unit)))
	}
	return ts
}

func TestFitDispersionTellsPoissonFromBunchedAndRegular(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const unit, span = 1000, 20_000.0 // rate 1 per 1000 ns, 20,000 sends
	failed := 0
	for range 200 {
		f := FitDispersion([]Counted{{poissonTimes(rng, span, unit), 0, int64(span) * unit, 5 * unit}, {poissonTimes(rng, span/2, unit), 0, int64(span/2) * unit, 3 * unit}})
		if !f.Judged() || math.Abs(f.Index-1) > 0.15 {
			t.Fatalf("Poisson: %v, want an index near 1", f)
		}
		if f.Fails() {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("Poisson sends failed %d of 200 times", failed)
	}
	var bunched, regular []int64
	for _, at := range poissonTimes(rng, span/3, 3*unit) {
		bunched = append(bunched, at, at, at) // three frames drawn at each instant
	}
	for i := range int64(span) {
		regular = append(regular, i*unit)
	}
	for what, ts := range map[string][]int64{"bunched in threes": bunched, "regular": regular} {
		if f := FitDispersion([]Counted{{ts, 0, int64(span) * unit, 5 * unit}}); !f.Fails() {
			t.Errorf("%s: %v passes", what, f)
		}
	}
}

func TestPeriodFit(t *testing.T) {
	var f PeriodFit
	for i := range 100 {
		f.Add(1000+float64(i%7)*50, 1000) // late or early by at most 30%
	}
	if !f.Judged() || f.Fails() {
		t.Errorf("gaps within a third of the period: %v, judged %v fails %v", f, f.Judged(), f.Fails())
	}
	for range 10 {
		f.Add(0, 1000)
	}
	if !f.Fails() {
		t.Errorf("10 of 110 gaps zero: %v passes", f)
	}
}

// ar1 is n samples of x(i) = rho·x(i−1) + noise, shifted positive.
func ar1(rng *rand.Rand, n int, rho float64) []float64 {
	x := make([]float64, n)
	prev := 0.0
	for i := range x {
		prev = rho*prev + rng.NormFloat64()
		x[i] = 100 + prev
	}
	return x
}

func TestLagDependence(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	runsOf := func(make func() []float64) [][]float64 {
		var runs [][]float64
		for range 40 {
			runs = append(runs, make())
		}
		return runs
	}
	failed := 0
	for range 200 {
		if LagDependence(runsOf(func() []float64 { return ar1(rng, 256, 0) }), 1).Fails() {
			failed++
		}
	}
	if failed > 1 {
		t.Errorf("independent samples failed %d of 200 times", failed)
	}
	// A drift: the stationarity test's, not this one's.
	drift := runsOf(func() []float64 {
		x := ar1(rng, 256, 0)
		for i := range x {
			x[i] += float64(i) / 20
		}
		return x
	})
	if d := LagDependence(drift, 1); d.Fails() {
		t.Errorf("independent samples on a linear drift: %v fails", d)
	}
	correlated := runsOf(func() []float64 { return ar1(rng, 256, 0.6) })
	if d := LagDependence(correlated, 1); !d.Fails() {
		t.Errorf("AR(1) 0.6: %v passes", d)
	}
	if k := ThinningFor(correlated); k < 2 || k > 4 {
		t.Errorf("AR(1) 0.6: thinning %d, want 2-4 (0.6^k below 1/3 from k = 3)", k)
	}
	// Worth more than half their number: reported, not failed.
	if d := LagDependence(runsOf(func() []float64 { return ar1(rng, 256, 0.2) }), 1); d.Fails() || d.Rho < 0.1 {
		t.Errorf("AR(1) 0.2: %v, want a correlation seen and passed", d)
	}
	// Stalls: every 50th sample starts 8 that wait behind one slow event.
	stalls := runsOf(func() []float64 {
		x := ar1(rng, 256, 0)
		for i := range x {
			if i%50 < 8 {
				x[i] += 20 * float64(8-i%50)
			}
		}
		return x
	})
	if d := LagDependence(stalls, 1); !d.Fails() {
		t.Errorf("periodic stalls: %v passes", d)
	}
	if d := LagDependence([][]float64{ar1(rng, 40, 0.9)}, 1); d.Judged() {
		t.Errorf("39 pairs judged: %v", d)
	}
}

// timed spreads values over [0, len) ns, one a ns.
func timed(values []float64) []Sample {
	s := make([]Sample, len(values))
	for i, v := range values {
		s[i] = Sample{At: int64(i), Value: int64(v * 1e3)}
	}
	return s
}

func TestTrendOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 3000
	failed := 0
	for range 200 {
		if TrendOf(timed(ar1(rng, n, 0)), 0, n).Fails() {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("stationary samples failed %d of 200 times", failed)
	}
	drift := ar1(rng, n, 0)
	for i := range drift {
		drift[i] *= 1 + float64(i)/n // doubling through the run
	}
	if tr := TrendOf(timed(drift), 0, n); !tr.Fails() {
		t.Errorf("a run whose latency doubles: %v passes", tr)
	}
	tail := ar1(rng, n, 0)
	for i := range tail {
		if i%5 == 0 {
			tail[i] *= 1 + 3*float64(i)/n // one in five samples slower and slower
		}
	}
	if tr := TrendOf(timed(tail), 0, n); !tr.Fails() || trends(tr.MedianZ, tr.MedianChange) {
		t.Errorf("a tail that quadruples, the median flat: %v, want the p90's trend alone", tr)
	}
	stalls := ar1(rng, n, 0)
	for i := range stalls {
		if i%100 < 8 {
			stalls[i] *= 5
		}
	}
	if tr := TrendOf(timed(stalls), 0, n); tr.Fails() {
		t.Errorf("periodic stalls, stationary: %v fails", tr)
	}
	if tr := TrendOf(timed(ar1(rng, 100, 0)), 0, 100); tr.Judged() {
		t.Errorf("100 samples judged: %v", tr)
	}
}

// Isolated spikes are no dependence: a line fitted to raw latencies would
// tilt toward one 20-ms spike in a block of 100-µs samples and make the
// rest look ordered.
func TestLagDependenceIgnoresIsolatedSpikes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var runs [][]float64
	for range 64 {
		x := ar1(rng, 256, 0)
		for i := range x {
			x[i] *= 1000 // about 100 µs
			if rng.Float64() < 0.01 {
				x[i] = 20e6 // 20 ms
			}
		}
		runs = append(runs, x)
	}
	if d := LagDependence(runs, 1); d.Fails() || d.Rho > 0.05 {
		t.Errorf("independent samples with 1%% spikes: %v", d)
	}
}
