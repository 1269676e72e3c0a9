package cost

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestSampleMeans draws n = 100,000 samples per distribution and checks the
// sample mean against Mean().
//
// Bound: the sample mean of n independent draws has standard error σ/√n. With
// the sample standard deviation s in place of σ (n is large), a deviation
// beyond 6·s/√n has probability about 2e-9 for an honest sampler — and the
// seed is fixed, so this test is deterministic anyway. For the configured
// distributions 6·s/√n is: exp (σ = mean) 6/316 = 1.9% of the mean; uniform
// 10–90µs (σ = 80/√12 = 23.1µs) 0.88%; lognormal σ=0.5 (σ = mean·√(e^0.25-1)
// = 0.53·mean) 1.0%; all inside the ±5% the spec allows, which is checked too.
func TestSampleMeans(t *testing.T) {
	const n = 100000
	for _, tc := range []struct {
		spec     string
		min, max time.Duration // every sample within
	}{
		{"0", 0, 0},
		{"fixed:50us", 50 * us, 50 * us},
		{"uniform:10us-90us", 10 * us, 90 * us},
		{"exp:50us", 0, 1000 * us},
		{"lognormal:50us,0.5", 0, 1000 * us},
		{"lognormal:10us,2", 0, 200 * us}, // the cap is hit ~7% of the time
		{"exp:1ns", 0, 20},
	} {
		d, err := Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		s := NewSampler(d, 42)
		var sum, sumSq float64
		capped := 0 // samples at the upper bound
		for range n {
			x := s.Sample()
			if x < tc.min || x > tc.max {
				t.Fatalf("%s: sample %v outside [%v, %v]", tc.spec, x, tc.min, tc.max)
			}
			if x == tc.max {
				capped++
			}
			f := float64(x)
			sum += f
			sumSq += f * f
		}
		mean := sum / n
		sd := math.Sqrt(max(sumSq/n-mean*mean, 0))
		want := float64(d.Mean())
		tol := 6*sd/math.Sqrt(n) + 1 // +1ns: Mean and samples are rounded to ns
		if dev := math.Abs(mean - want); dev > tol || dev > 0.05*want {
			t.Errorf("%s: sample mean %.0fns, Mean() %.0fns: deviation %.0fns > bound %.0fns (6σ/√n) or 5%%",
				tc.spec, mean, want, dev, tol)
		}
		t.Logf("%-20s mean %8.0fns want %8.0fns  6σ/√n %6.0fns  at cap %d", tc.spec, mean, want, tol, capped)
	}
}

func TestSamplerDeterministic(t *testing.T) {
	d, _ := Parse("exp:50us")
	a, b, c := NewSampler(d, 1), NewSampler(d, 1), NewSampler(d, 2)
	same := true
	for range 100 {
		x, y, z := a.Sample(), b.Sample(), c.Sample()
		if x != y {
			t.Fatal("same seed, different sequences")
		}
		same = same && x == z
	}
	if same {
		t.Error("different seeds gave the same sequence")
	}
	var nilS *Sampler
	if nilS.Sample() != 0 || !nilS.Dist().IsZero() {
		t.Error("nil Sampler does not sample 0")
	}
}

// oneSource always returns the largest uint64, so Float64 is 1-2^-53 and the
// exponential inverse CDF gives its largest value, 36.7× the mean.
type oneSource struct{}

func (oneSource) Uint64() uint64 { return math.MaxUint64 }

func TestExpCap(t *testing.T) {
	d, _ := Parse("exp:50us")
	s := &Sampler{d: d, rng: rand.New(oneSource{})}
	if got := s.Sample(); got != 20*50*us {
		t.Errorf("extreme draw = %v, want the cap %v", got, 20*50*us)
	}
}

func TestSampleZeroAlloc(t *testing.T) {
	for _, spec := range []string{"0", "fixed:5us", "uniform:1us-9us", "exp:5us", "lognormal:5us,1"} {
		d, _ := Parse(spec)
		s := NewSampler(d, 7)
		if a := testing.AllocsPerRun(1000, func() { s.Sample() }); a != 0 {
			t.Errorf("%s: Sample allocates %v times", spec, a)
		}
	}
}

func BenchmarkSample(b *testing.B) {
	for _, spec := range []string{"fixed:50us", "uniform:10us-90us", "exp:50us", "lognormal:50us,0.5"} {
		d, _ := Parse(spec)
		s := NewSampler(d, 1)
		b.Run(spec, func(b *testing.B) {
			b.ReportAllocs()
			var sum time.Duration
			for b.Loop() {
				sum += s.Sample()
			}
			if sum < 0 {
				b.Fatal("negative")
			}
		})
	}
}
