package results

import (
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// A latency row says whether the sides' merged intervals overlap or lie
// apart, and nothing where a side has too few samples for the percentile.
func TestRowIntervals(t *testing.T) {
	hist := func(n int, at int64) *hdrhistogram.Histogram {
		h := NewHistogram()
		for i := range n {
			h.RecordValue(at + int64(i%100)*1000) // at … at+99 µs
		}
		return h
	}
	row := CompareRow{Cell: "baseline", Metric: MetricDataP99, Tested: true}
	sides := func(old, new *hdrhistogram.Histogram) (o, n map[string]map[string]*hdrhistogram.Histogram) {
		return map[string]map[string]*hdrhistogram.Histogram{"baseline": {"data": old}},
			map[string]map[string]*hdrhistogram.Histogram{"baseline": {"data": new}}
	}
	for _, tc := range []struct {
		name     string
		old, new *hdrhistogram.Histogram
		want     string
	}{
		{"the same samples", hist(10_000, 100_000), hist(10_000, 100_000), IntervalsOverlap},
		{"a millisecond apart", hist(10_000, 100_000), hist(10_000, 1_100_000), IntervalsApart},
		{"too few new samples", hist(10_000, 100_000), hist(200, 1_100_000), ""},
	} {
		o, n := sides(tc.old, tc.new)
		if got := rowIntervals(row, o, n); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	o, n := sides(hist(10_000, 100_000), hist(10_000, 100_000))
	if got := rowIntervals(CompareRow{Cell: "baseline", Metric: MetricThroughput}, o, n); got != "" {
		t.Errorf("throughput: %q, want none", got)
	}
}
