package results

import (
	"slices"
	"strings"
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

// New runs that were valid but contended are left out with a note, never
// taken for a cell that lost its valid runs (a regression).
func TestCompareLeavesContendedRunsOut(t *testing.T) {
	manifest := func(contended bool) *Manifest {
		m := &Manifest{Spec: SpecInfo{Name: "s"}, Cells: []CellInfo{{ID: "baseline", Config: map[string]string{"reactor": "lt"}}}}
		for r := 1; r <= 3; r++ {
			rec := RunRecord{Cell: "baseline", Repeat: r, Valid: true, Metrics: map[string]float64{MetricThroughput: 1000}}
			if contended {
				rec.Contended = []string{"the server's CPU 0: others' processes 80% of it"}
			}
			m.Runs = append(m.Runs, rec)
		}
		return m
	}
	c, err := Compare(manifest(false), manifest(true), CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Regressions() != 0 || len(c.Failures) != 0 {
		t.Errorf("contended new runs: failures %+v, %d regressions; want none", c.Failures, c.Regressions())
	}
	if !slices.ContainsFunc(c.Notes, func(n string) bool { return strings.Contains(n, "0 old and 3 new valid runs were contended") }) {
		t.Errorf("no note of the contended runs: %q", c.Notes)
	}
}
