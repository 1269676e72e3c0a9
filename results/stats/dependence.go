package stats

import (
	"fmt"
	"math"
	"slices"

	"github.com/reactorlab/reactorlab/results/figure"
)

// Dependence is the rank correlation between latency samples lag apart
// (lag 1: consecutive), pooled over runs of consecutive samples (a
// record.SampleLog's blocks). Each run is ranked, then the ranks' linear trend is
// taken out, so a slow drift — the stationarity test's to judge — does not
// read as dependence, and one outlier cannot tilt the line (a line fitted
// to the raw latencies is, and one 20-ms spike in a block of 100-µs
// samples made its detrended ranks nearly monotone); what is left is samples that share a cause: a
// stall that holds several in a row, a queue that outlives a sample's
// gap. A percentile's interval assumes independent samples: with a lag-1
// correlation ρ its true width is about √((1+ρ)/(1−ρ)) times the one
// printed (an AR(1) approximation).
type Dependence struct {
	Lag   int
	Pairs int     // sample pairs lag apart, over all runs
	Rho   float64 // Spearman's ρ, the runs' ρ weighted by their pairs
	Z     float64 // ρ in standard errors under independence: ρ·√pairs
}

// Thresholds of Dependence: a correlation fails when it is beyond chance
// (one-sided 0.05%) and the samples are worth fewer than half their
// number: n(1−ρ)/(1+ρ) < n/2 from ρ = 1/3 (an interval √2 or more too
// narrow). A weaker dependence is reported, not failed: measured on a
// 2-CPU VM with its other CPU busy, a plain echo's consecutive latencies
// 5 ms apart have ρ 0.07–0.20 (the machine's own state), a server that
// stalls 100 ms every 500 ms 0.43–0.60.
const (
	maxDependenceZ   = 3.29
	maxDependenceRho = 1.0 / 3
	// MinDependencePairs is the fewest pairs the correlation is judged on.
	MinDependencePairs = 100
	// MaxThinning is the largest thinning ThinningFor tries.
	MaxThinning = 64
)

// Ranked are runs of consecutive samples, each ranked and its ranks'
// linear trend removed (see Dependence) once, so that correlations at
// several lags cost no further allocation: the gate that judges them runs
// at the end of every load generator run, whose allocations per frame are
// held to zero.
type Ranked [][]float64

// RankRuns ranks and detrends each of runs (each a slice of consecutive
// samples).
func RankRuns(runs [][]float64) Ranked {
	total, longest := 0, 0
	for _, run := range runs {
		total, longest = total+len(run), max(longest, len(run))
	}
	all, idx := make([]float64, total), make([]int, longest)
	r := make(Ranked, len(runs))
	for i, run := range runs {
		r[i], all = all[:len(run):len(run)], all[len(run):]
		midranksInto(r[i], run, idx[:len(run)])
		detrendInPlace(r[i])
	}
	return r
}

// LagDependence is the dependence between samples lag apart in runs
// (each run a slice of consecutive samples; runs shorter than lag+3 are
// left out).
func LagDependence(runs [][]float64, lag int) Dependence {
	return RankRuns(runs).Lag(lag)
}

// Lag is LagDependence of the runs r was ranked from.
func (rk Ranked) Lag(lag int) Dependence {
	d := Dependence{Lag: lag}
	var weighted float64
	for _, r := range rk {
		n := len(r) - lag
		if n < 3 {
			continue
		}
		rho := pearson(r[:n], r[lag:])
		if math.IsNaN(rho) {
			continue // a constant run: no ranks to correlate
		}
		weighted += rho * float64(n)
		d.Pairs += n
	}
	if d.Pairs > 0 {
		d.Rho = weighted / float64(d.Pairs)
		d.Z = d.Rho * math.Sqrt(float64(d.Pairs))
	}
	return d
}

// Judged reports whether there were enough pairs to judge.
func (d Dependence) Judged() bool { return d.Pairs >= MinDependencePairs }

// Fails reports whether samples lag apart are positively correlated
// beyond chance and by enough that they are worth fewer than half their
// number.
func (d Dependence) Fails() bool {
	return d.Judged() && d.Z > maxDependenceZ && d.Rho >= maxDependenceRho
}

// Worth is the share of their number the samples are worth for an
// interval under an AR(1) approximation, (1−ρ)/(1+ρ), at most 1.
func (d Dependence) Worth() float64 {
	if d.Rho <= 0 {
		return 1
	}
	return (1 - d.Rho) / (1 + d.Rho)
}

// String is the figure: "lag-1 rank correlation 0.02 (z 1.1) over 30,000
// pairs: worth 96% of their number".
func (d Dependence) String() string {
	return fmt.Sprintf("lag-%d rank correlation %.3f (z %.1f) over %s pairs: worth about %.0f%% of their number", d.Lag, d.Rho, d.Z, figure.Count(int64(d.Pairs)), 100*d.Worth())
}

// ThinningFor is the smallest lag k (1, 2, 4, … MaxThinning) at which
// samples k apart do not fail LagDependence: their correlation at lag k is
// below 1/3 or within chance (no proof of independence at every lag). It returns 0 when none up to MaxThinning
// passes, or when the runs are too short to judge at some lag first.
func ThinningFor(runs [][]float64) int { return RankRuns(runs).Thinning() }

// Thinning is ThinningFor of the runs rk was ranked from.
func (rk Ranked) Thinning() int {
	for k := 1; k <= MaxThinning; k *= 2 {
		d := rk.Lag(k)
		if !d.Judged() {
			return 0
		}
		if !d.Fails() {
			return k
		}
	}
	return 0
}

// IntervalThinning is the k that an interval over runs' correlated
// samples counts one sample in (Interval's Thinning): the larger of
// ThinningFor's k and 1/Worth of the lag-1 correlation (the AR(1) factor,
// which the residual correlation of samples k apart would otherwise leave
// out), or ThinningUnknown when ThinningFor finds no k. Measured on AR(1)
// latencies of lag-1 correlation 0.6 and 0.9 (TestThinnedIntervalCoverage):
// ThinningFor's k alone covered the true p50 in 89% of trials, this in
// 95.5–99%; the unthinned interval in 37–76%.
func IntervalThinning(runs [][]float64) int { return RankRuns(runs).IntervalThinning() }

// IntervalThinning is IntervalThinning of the runs rk was ranked from.
func (rk Ranked) IntervalThinning() int {
	k := rk.Thinning()
	if k == 0 {
		return ThinningUnknown
	}
	return max(k, int(math.Ceil(1/rk.Lag(1).Worth()-1e-9)))
}

// detrendInPlace takes x's least-squares line against its index out of x.
func detrendInPlace(x []float64) {
	n := float64(len(x))
	var sx, sy, sxx, sxy float64
	for i, v := range x {
		fi := float64(i)
		sx += fi
		sy += v
		sxx += fi * fi
		sxy += fi * v
	}
	den := n*sxx - sx*sx
	slope := 0.0
	if den != 0 {
		slope = (n*sxy - sx*sy) / den
	}
	for i := range x {
		x[i] -= slope * float64(i)
	}
}

// midranksInto writes each value of x's rank (1-based, ties given their
// mean rank) into r, with idx as scratch (both len(x)).
func midranksInto(r, x []float64, idx []int) {
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case x[a] < x[b]:
			return -1
		case x[a] > x[b]:
			return 1
		}
		return 0
	})
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		mid := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mid
		}
		i = j + 1
	}
}

// pearson is the correlation of a and b (equal lengths); NaN when either
// is constant.
func pearson(a, b []float64) float64 {
	n := float64(len(a))
	var ma, mb float64
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma /= n
	mb /= n
	var sab, saa, sbb float64
	for i := range a {
		da, db := a[i]-ma, b[i]-mb
		sab += da * db
		saa += da * da
		sbb += db * db
	}
	if saa == 0 || sbb == 0 {
		return math.NaN()
	}
	return sab / math.Sqrt(saa*sbb)
}
