package results

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/results/stats"
)

// A latency row says whether the sides' merged intervals overlap or lie
// apart, and nothing where a side has too few samples for the percentile.
func TestRowIntervals(t *testing.T) {
	hist := func(n int, at int64) *hdrhistogram.Histogram {
		h := record.NewHistogram()
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
		if got := rowIntervals(row, o, n, 0, 0); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// 2 µs apart: apart as independent samples, overlapping when the new
	// side's count one in 32 (its interval is that of 312 samples).
	o, n := sides(hist(10_000, 100_000), hist(10_000, 102_000))
	if got, thinned := rowIntervals(row, o, n, 0, 0), rowIntervals(row, o, n, 0, 32); got != IntervalsApart || thinned != IntervalsOverlap {
		t.Errorf("2 µs apart: %q independent, %q thinned by 32; want apart, overlap", got, thinned)
	}
	o, n = sides(hist(10_000, 100_000), hist(10_000, 100_000))
	if got := rowIntervals(CompareRow{Cell: "baseline", Metric: MetricThroughput}, o, n, 0, 0); got != "" {
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

// A cell's merged intervals count one sample in the largest thinning of
// its compared runs (an unknown one leaves no interval), contended runs'
// not counted; the analysis and compare both use it.
func TestCellThinning(t *testing.T) {
	m := &Manifest{
		Cells: []CellInfo{{ID: "baseline"}, {ID: "f=1", Factor: "f", Value: "1"}},
		Runs: []RunRecord{
			{Cell: "baseline", Repeat: 1, Valid: true, Thinning: map[string]int{"control": 4}},
			{Cell: "baseline", Repeat: 2, Valid: true, Thinning: map[string]int{"control": 2, "data": stats.ThinningUnknown}},
			{Cell: "baseline", Repeat: 3, Valid: true, Contended: []string{"loadgen"}, Thinning: map[string]int{"control": 16}},
			{Cell: "f=1", Repeat: 1, Valid: true},
		},
	}
	for _, tc := range []struct {
		cell, class string
		want        int
	}{{"baseline", "control", 4}, {"baseline", "data", stats.ThinningUnknown}, {"baseline", "steady", 0}, {"f=1", "control", 0}} {
		if got := m.CellThinning(tc.cell, tc.class); got != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.cell, tc.class, got, tc.want)
		}
	}
	h := record.NewHistogram()
	for i := range 20_000 {
		h.RecordValue(int64(100_000 + i%1000*100))
	}
	hists := map[string]map[string]*hdrhistogram.Histogram{"baseline": {"control": h, "data": h}, "f=1": {"control": h}}
	a := Analyze(m, hists)
	base, cell := a.Cells[0].Latency, a.Cells[1].Latency
	if iv := base["control"].Intervals["p99"]; iv.Thinning != 4 || iv.TooFew {
		t.Errorf("baseline control p99: %+v, want an interval counting one in 4", iv)
	}
	if iv := base["data"].Intervals["p50"]; iv.Thinning != stats.ThinningUnknown || !iv.TooFew {
		t.Errorf("baseline data p50: %+v, want none", iv)
	}
	wide, plain := base["control"].Intervals["p50"], cell["control"].Intervals["p50"]
	if plain.Thinning != 0 || wide.HiUs-wide.LoUs <= plain.HiUs-plain.LoUs {
		t.Errorf("p50 of the same samples: thinned %+v not wider than independent %+v", wide, plain)
	}
}

// A factor cell's latency percentile says whether its merged interval and
// the baseline's overlap: apart for a cell twice as slow, overlapping for
// the same distribution, nothing where either has too few samples.
func TestCompareIntervals(t *testing.T) {
	if c, l, ok := latencyPercentile("control_p999"); !ok || c != "control" || l != "p99.9" {
		t.Errorf("control_p999 → %q %q %v", c, l, ok)
	}
	if _, _, ok := latencyPercentile("server_cpu"); ok {
		t.Errorf("server_cpu is no latency percentile")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	summary := func(n int, scale float64) record.ClassSummary {
		h := hdrhistogram.New(1, 60e9, 3)
		for range n {
			h.RecordValue(int64(rng.ExpFloat64()*scale*1e5) + 1000)
		}
		return record.Summarize(h, 0)
	}
	cells := []CellAnalysis{
		{ID: "base", Latency: map[string]record.ClassSummary{"data": summary(20000, 1)}},
		{ID: "slower", Factor: "f", Latency: map[string]record.ClassSummary{"data": summary(20000, 2)}, Metrics: []MetricResult{{Name: "data_p50"}, {Name: "data_p999"}}},
		{ID: "same", Factor: "f", Latency: map[string]record.ClassSummary{"data": summary(20000, 1)}, Metrics: []MetricResult{{Name: "data_p50"}}},
		{ID: "few", Factor: "f", Latency: map[string]record.ClassSummary{"data": summary(1000, 2)}, Metrics: []MetricResult{{Name: "data_p999"}}},
	}
	compareIntervals(cells)
	for _, tc := range []struct {
		cell, metric int
		want         string
	}{{1, 0, IntervalsApart}, {1, 1, IntervalsApart}, {2, 0, IntervalsOverlap}, {3, 0, ""}} {
		mr := cells[tc.cell].Metrics[tc.metric]
		if mr.Intervals != tc.want {
			t.Errorf("%s %s: intervals %q, want %q (%s)", cells[tc.cell].ID, mr.Name, mr.Intervals, tc.want, mr.IntervalNote())
		}
	}
	if got := cells[1].Metrics[1].IntervalNote(); got != "merged p99.9 95% intervals apart" {
		t.Errorf("note %q", got)
	}
}
