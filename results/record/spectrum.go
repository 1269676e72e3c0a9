package record

import (
	"bufio"
	"fmt"
	"io"
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// spectrumPercentiles are the short list printed before the spectrum, as
// wrk2 --latency does.
var spectrumPercentiles = []float64{50, 75, 90, 99, 99.9, 99.99, 99.999, 100}

// WriteSpectrum writes h (nanosecond values) in the format of wrk2 --latency
// and HdrHistogram's outputPercentileDistribution: a title line, the short
// percentile list, then the "Detailed Percentile spectrum" table with
// columns Value (milliseconds), Percentile, TotalCount and 1/(1-Percentile),
// five reporting ticks per half distance, and the Mean/Max/Buckets footer.
// An empty histogram prints the title and "(no values)".
func WriteSpectrum(w io.Writer, title string, h *hdrhistogram.Histogram) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "  %s\n", title)
	if h.TotalCount() == 0 {
		fmt.Fprintf(bw, "  (no values)\n")
		return bw.Flush()
	}
	for _, p := range spectrumPercentiles {
		fmt.Fprintf(bw, "%7.3f%% %9s\n", p, formatNs(h.ValueAtPercentile(p)))
	}
	fmt.Fprintf(bw, "\n  Detailed Percentile spectrum:\n")
	fmt.Fprintf(bw, "%12s %12s %12s %12s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)")
	const msScale = 1e6
	for _, b := range h.CumulativeDistributionWithTicks(5) {
		q := b.Quantile / 100
		inv := fmt.Sprintf("%12.2f", 1/(1-q))
		if q >= 1 {
			inv = fmt.Sprintf("%12s", "inf")
		}
		fmt.Fprintf(bw, "%12.3f %12f %12d %s\n", float64(b.ValueAt)/msScale, q, b.Count, inv)
	}
	buckets, subBuckets := geometry(h)
	fmt.Fprintf(bw, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", h.Mean()/msScale, h.StdDev()/msScale)
	fmt.Fprintf(bw, "#[Max     = %12.3f, Total count    = %12d]\n", float64(h.Max())/msScale, h.TotalCount())
	fmt.Fprintf(bw, "#[Buckets = %12d, SubBuckets     = %12d]\n", buckets, subBuckets)
	return bw.Flush()
}

// formatNs prints a duration the way wrk2 does: two decimals in us, ms or s.
func formatNs(ns int64) string {
	switch v := float64(ns); {
	case v < 1e6:
		return fmt.Sprintf("%.2fus", v/1e3)
	case v < 1e9:
		return fmt.Sprintf("%.2fms", v/1e6)
	default:
		return fmt.Sprintf("%.2fs", v/1e9)
	}
}

// geometry returns the bucket and sub-bucket counts of h, computed from its
// parameters as HdrHistogram does (the Go histogram does not export them).
func geometry(h *hdrhistogram.Histogram) (buckets, subBuckets int64) {
	largest := 2 * math.Pow(10, float64(h.SignificantFigures()))
	subBuckets = int64(1) << int(math.Ceil(math.Log2(largest)))
	unit := 0
	for lowest := h.LowestTrackableValue(); lowest > 1; lowest >>= 1 {
		unit++
	}
	smallestUntrackable := subBuckets << unit
	buckets = 1
	for smallestUntrackable <= h.HighestTrackableValue() {
		if smallestUntrackable > math.MaxInt64/2 {
			return buckets + 1, subBuckets
		}
		smallestUntrackable <<= 1
		buckets++
	}
	return buckets, subBuckets
}
