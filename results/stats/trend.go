package stats

import (
	"fmt"
	"math"
	"slices"
)

// Trend is the stationarity test of a run's latencies: the measured time
// cut into equal slices, each slice's median and p90, and Mann–Kendall's
// test of each series for a monotone trend. A run fails when either
// percentile trends beyond chance (two-sided 1%) and by more than a
// quarter between the run's first and last quarter — a server that drifts
// (a leak, a queue that never drains, a cache that fills), or a machine
// whose load changed under the run. Percentiles of such a run describe
// no steady state.
type Trend struct {
	Slices int
	// Median and P90 are the slices' percentiles in µs, in time order.
	Median, P90 []float64
	// MedianZ and P90Z are Mann–Kendall's statistics in standard errors.
	MedianZ, P90Z float64
	// MedianChange and P90Change are the last quarter's mean over the
	// first quarter's, of the slices' percentiles.
	MedianChange, P90Change float64
}

// Thresholds of Trend.
const (
	maxTrendZ      = 2.576 // two-sided 1%
	trendChange    = 1.25  // a quarter, either way
	trendSlices    = 10
	minTrendSlices = 6  // fewer cannot reach maxTrendZ even when monotone
	minSliceCount  = 20 // samples a slice needs for its p90
)

// TrendOf cuts [lo, hi) into slices (10, fewer when the samples are too
// few for 20 a slice; at least 6) and tests the slices' percentiles. Each
// sample is a (time, latency ns) pair; samples outside [lo, hi) are left
// out. Slices is 0 when the samples are too few to judge.
func TrendOf(samples []Sample, lo, hi int64) Trend {
	var t Trend
	n := 0
	for _, s := range samples {
		if s.At >= lo && s.At < hi {
			n++
		}
	}
	k := min(trendSlices, n/minSliceCount)
	if k < minTrendSlices || hi <= lo {
		return t
	}
	slice := make([][]float64, k)
	for _, s := range samples {
		if s.At < lo || s.At >= hi {
			continue
		}
		i := min(int(float64(s.At-lo)/float64(hi-lo)*float64(k)), k-1)
		slice[i] = append(slice[i], float64(s.Value)/1e3)
	}
	for _, v := range slice {
		if len(v) < minSliceCount/2 {
			return Trend{} // a slice nearly empty: the samples do not cover the run
		}
		slices.Sort(v)
		t.Median = append(t.Median, quantileSorted(v, 0.5))
		t.P90 = append(t.P90, quantileSorted(v, 0.9))
	}
	t.Slices = k
	t.MedianZ, t.MedianChange = mannKendall(t.Median), quarterChange(t.Median)
	t.P90Z, t.P90Change = mannKendall(t.P90), quarterChange(t.P90)
	return t
}

// quantileSorted is the q-quantile of sorted v by the nearest rank.
func quantileSorted(v []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}

// mannKendall is the Mann–Kendall statistic S of x against its order in
// standard errors, continuity-corrected (ties in x count as neither).
func mannKendall(x []float64) float64 {
	n := len(x)
	s := 0
	for i := range n {
		for j := i + 1; j < n; j++ {
			switch {
			case x[j] > x[i]:
				s++
			case x[j] < x[i]:
				s--
			}
		}
	}
	v := float64(n*(n-1)*(2*n+5)) / 18
	switch {
	case s > 0:
		return (float64(s) - 1) / math.Sqrt(v)
	case s < 0:
		return (float64(s) + 1) / math.Sqrt(v)
	}
	return 0
}

// quarterChange is the mean of x's last quarter (at least one value)
// over its first quarter's; 1 when the first is 0.
func quarterChange(x []float64) float64 {
	q := max(1, len(x)/4)
	var first, last float64
	for i := range q {
		first += x[i]
		last += x[len(x)-q+i]
	}
	if first == 0 {
		return 1
	}
	return last / first
}

// Judged reports whether there were enough samples over the run to judge.
func (t Trend) Judged() bool { return t.Slices > 0 }

// Fails reports whether the median or the p90 trends beyond chance and
// by more than a quarter.
func (t Trend) Fails() bool {
	return t.Judged() && (trends(t.MedianZ, t.MedianChange) || trends(t.P90Z, t.P90Change))
}

func trends(z, change float64) bool {
	return math.Abs(z) > maxTrendZ && (change > trendChange || change < 1/trendChange)
}

// String is the figure: "over 10 slices, median ×1.02 (Mann–Kendall z 0.4), p90 ×0.97 (z −0.9)".
func (t Trend) String() string {
	return fmt.Sprintf("over %d slices of the run, median ×%.2f first to last quarter (Mann–Kendall z %.1f), p90 ×%.2f (z %.1f)",
		t.Slices, t.MedianChange, t.MedianZ, t.P90Change, t.P90Z)
}
