package stats

import (
	"fmt"
	"math"
	"slices"

	"github.com/reactorlab/reactorlab/results/figure"
)

// Tests of sent times against the arrival process intended for them.
// Each judges at a resolution r: the generator cannot place a send closer
// than r to its intended time (its send grain, its own scheduling delay),
// so what happens below r is not the process's to keep, and each test
// looks only at what r does not blur.

// ExpFit is the Anderson–Darling test of gaps against the exponential
// (a Poisson process's gaps), at resolution r: by the exponential's lack
// of memory, the gaps longer than r, less r, are exponential with the same
// mean, so those excesses are tested (the mean estimated from them) and
// the gaps below r are left to DispersionFit. A2 is the statistic with
// Stephens' small-sample factor, A²(1 + 0.6/n).
type ExpFit struct {
	N  int     // excesses tested
	A2 float64 // A²(1 + 0.6/N)
}

// expFitCritical is A²(1+0.6/n)'s 1% critical value for the exponential
// with its mean estimated (Stephens 1974, Table 1.3, case 3): a correct
// Poisson generator fails 1 run in 100.
const expFitCritical = 1.957

// MinExpFit is the fewest excesses ExpFit judges from.
const MinExpFit = 100

// FitExponential tests the gaps longer than r (ns), at most maxN of them
// taken evenly from gaps (so consecutive tested gaps are apart in time).
func FitExponential(gaps []float64, r float64, maxN int) ExpFit {
	var ex []float64
	for _, g := range gaps {
		if g > r {
			ex = append(ex, g-r)
		}
	}
	if len(ex) > maxN && maxN > 0 {
		step := float64(len(ex)) / float64(maxN)
		picked := make([]float64, 0, maxN)
		for i := range maxN {
			picked = append(picked, ex[int(float64(i)*step)])
		}
		ex = picked
	}
	return ExpFit{N: len(ex), A2: andersonDarlingExp(ex)}
}

// andersonDarlingExp is A²(1+0.6/n) of x against the exponential with
// mean x's mean; 0 for fewer than 2 values.
func andersonDarlingExp(x []float64) float64 {
	n := len(x)
	if n < 2 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	mean := 0.0
	for _, v := range s {
		mean += v
	}
	mean /= float64(n)
	if mean <= 0 {
		return math.Inf(1) // every gap zero: nothing exponential
	}
	// ln F(x) and ln(1−F(x)) for F(x) = 1 − e^(−x/mean), F kept off 0
	// (a zero excess) so the sum stays finite and large.
	const tiny = 1e-300
	sum := 0.0
	for i, v := range s {
		lo := math.Log(math.Max(-math.Expm1(-v/mean), tiny))
		hi := -s[n-1-i] / mean // ln(1 − F(x_(n−i)))
		sum += float64(2*i+1) * (lo + hi)
	}
	a2 := -float64(n) - sum/float64(n)
	return a2 * (1 + 0.6/float64(n))
}

// Judged reports whether there were enough excesses to judge.
func (f ExpFit) Judged() bool { return f.N >= MinExpFit }

// Fails reports whether the gaps are not exponential at the 1% level.
func (f ExpFit) Fails() bool { return f.Judged() && f.A2 > expFitCritical }

// String is the figure: "Anderson–Darling A² 0.61 (1% critical 1.96), n = 1,000".
func (f ExpFit) String() string {
	return fmt.Sprintf("Anderson–Darling A² %.2f on %s gaps beyond the resolution (1%% critical %.2f)", f.A2, figure.Count(int64(f.N)), expFitCritical)
}

// DispersionFit is Fisher's index of dispersion of the counts of sends in
// equal windows: a Poisson process's counts have variance equal to their
// mean (index 1), sends bunched in groups of k have about k, sends more
// regular than Poisson less than 1. The windows are at least 20 times
// the resolution wide, so where in a window a send fell does not matter.
type DispersionFit struct {
	Windows int     // counted windows
	Mean    float64 // sends a window
	Index   float64 // variance / mean
	Z       float64 // (Index − 1) in standard errors under Poisson
}

// Thresholds of DispersionFit: the index differs from 1 both beyond
// chance (|Z| > 3.29, two-sided 0.1%) and by more than a quarter, so a
// long run's tiny departures (a send moved across a window's edge by the
// generator's own delay) are not charged.
const (
	maxDispersionZ  = 3.29
	dispersionRatio = 1.25
	// MinDispersionWindows is the fewest windows the index is judged on.
	MinDispersionWindows = 30
)

// Counted is one stretch of sends for FitDispersion: their times, the
// stretch [Lo, Hi) in which every send is among them, and the windows'
// width.
type Counted struct {
	Times         []int64
	Lo, Hi, Width int64
}

// FitDispersion counts each stretch's sends in windows of its width from
// its Lo (a last partial window left out) and returns their index of
// dispersion. Stretches are pooled (several loops, each its own Poisson
// process, or several runs of consecutive sends of one): each stretch's
// windows against its own mean, the statistic Σ(x−mean)²/mean summed and
// referred to the chi-square with Σ(windows−1) degrees of freedom.
func FitDispersion(stretches []Counted) DispersionFit {
	var stat, df float64
	var windows int
	var sends float64
	for _, st := range stretches {
		if st.Width <= 0 {
			continue
		}
		m := int((st.Hi - st.Lo) / st.Width)
		if m < 2 {
			continue
		}
		counts := make([]float64, m)
		for _, t := range st.Times {
			if t < st.Lo {
				continue
			}
			i := int((t - st.Lo) / st.Width)
			if i < m {
				counts[i]++
			}
		}
		mean := 0.0
		for _, c := range counts {
			mean += c
		}
		mean /= float64(m)
		if mean == 0 {
			continue
		}
		for _, c := range counts {
			stat += (c - mean) * (c - mean) / mean
		}
		df += float64(m - 1)
		windows += m
		sends += mean * float64(m)
	}
	f := DispersionFit{Windows: windows}
	if df == 0 {
		return f
	}
	f.Mean = sends / float64(windows)
	f.Index = stat / df
	f.Z = chiSquareZ(stat, df)
	return f
}

// chiSquareZ is the Wilson–Hilferty normal deviate of x under the
// chi-square with k degrees of freedom (good to a few hundredths for
// k ≥ 30).
func chiSquareZ(x, k float64) float64 {
	v := 2 / (9 * k)
	return (math.Cbrt(x/k) - (1 - v)) / math.Sqrt(v)
}

// Judged reports whether there were enough windows to judge.
func (f DispersionFit) Judged() bool { return f.Windows >= MinDispersionWindows && f.Mean > 0 }

// Fails reports whether the counts are over- or under-dispersed for a
// Poisson process, beyond chance and by more than a quarter.
func (f DispersionFit) Fails() bool {
	return f.Judged() && math.Abs(f.Z) > maxDispersionZ && (f.Index > dispersionRatio || f.Index < 1/dispersionRatio)
}

// String is the figure: "index of dispersion 1.03 (z 0.7) over 3,000 windows of 4.1 sends".
func (f DispersionFit) String() string {
	return fmt.Sprintf("index of dispersion %.2f (z %.1f; Poisson 1) over %s windows of %.1f sends", f.Index, f.Z, figure.Count(int64(f.Windows)), f.Mean)
}

// PeriodFit is how closely each source's sends keep its fixed period: the
// share of gaps between one source's consecutive sends that are off the
// period by more than half of it. Judged only where the period is at
// least twice the resolution (else the generator may rightly send two
// due frames together).
type PeriodFit struct {
	Gaps int // gaps of judged sources
	Off  int // those off by more than half the period
}

// maxPeriodOff is the share of gaps PeriodFit allows off: a generator
// delayed now and then (a stall sends its due frames together) stays
// under it, a schedule that bunches its sources does not.
const maxPeriodOff = 0.05

// MinPeriodFit is the fewest gaps PeriodFit judges from.
const MinPeriodFit = 30

// Add counts one source's gap against its period (ns).
func (f *PeriodFit) Add(gap, period float64) {
	f.Gaps++
	if math.Abs(gap-period) > period/2 {
		f.Off++
	}
}

// Judged reports whether there were enough gaps to judge.
func (f PeriodFit) Judged() bool { return f.Gaps >= MinPeriodFit }

// Fails reports whether more than 5% of the gaps were off the period.
func (f PeriodFit) Fails() bool {
	return f.Judged() && float64(f.Off) > maxPeriodOff*float64(f.Gaps)
}

// String is the figure: "12 of 2,990 gaps off the period by more than half (0.4%; allowed 5%)".
func (f PeriodFit) String() string {
	share := 0.0
	if f.Gaps > 0 {
		share = 100 * float64(f.Off) / float64(f.Gaps)
	}
	return fmt.Sprintf("%s of %s gaps between a source's sends off its period by more than half (%.1f%%; allowed %.0f%%)",
		figure.Count(int64(f.Off)), figure.Count(int64(f.Gaps)), share, 100*maxPeriodOff)
}
