package record

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/reactorlab/reactorlab/results/figure"
	"github.com/reactorlab/reactorlab/results/stats"
)

// ClassSummary summarises one histogram of nanosecond values. Every duration
// is in microseconds, as a float; an empty histogram gives zeros. The JSON
// field names are stable.
type ClassSummary struct {
	Count   int64   `json:"count"`
	MinUs   float64 `json:"min_us"`
	MeanUs  float64 `json:"mean_us"`
	MaxUs   float64 `json:"max_us"`
	P50Us   float64 `json:"p50_us"`
	P90Us   float64 `json:"p90_us"`
	P99Us   float64 `json:"p99_us"`
	P999Us  float64 `json:"p99_9_us"`
	P9999Us float64 `json:"p99_99_us"`
	// Clamped counts values recorded at a bound of the histogram's range
	// ([0, 60 s]): Count includes them, at the bound.
	Clamped int64 `json:"clamped"`
	// Dropped counts values that could not be recorded at all (after the
	// Recorder was closed): Count does not include them.
	Dropped int64 `json:"dropped,omitempty"`
	// Intervals are the Confidence intervals of the percentiles above,
	// keyed by SummaryPercentiles' labels ("p50" … "p99.99"); where Count
	// is too few for one, its entry says so (TooFew, Need), and the point
	// figure is no estimate of that percentile.
	Intervals map[string]stats.Interval `json:"intervals,omitempty"`
}

// SummaryPercentiles are the percentiles a ClassSummary holds, with the
// labels of their intervals.
var SummaryPercentiles = []struct {
	P     float64
	Label string
}{{50, "p50"}, {90, "p90"}, {99, "p99"}, {99.9, "p99.9"}, {99.99, "p99.99"}}

// Cell is percentile label's point figure (µs) as a table shows it, with
// its interval: "412 [398–431]", or, where the samples are too few for
// it, "too few: n < 2,995" instead of a number. Without an interval (a
// summary written before intervals were) it is the figure alone.
func (s ClassSummary) Cell(label string, point float64) string {
	iv, ok := s.Intervals[label]
	switch {
	case !ok:
		return figure.Value(point)
	case iv.TooFew:
		return iv.TooFewText()
	}
	return figure.Value(point) + " [" + figure.Range(iv.LoUs, iv.HiUs) + "]"
}

// Summarize summarises h (nanosecond values) with the given clamped count.
func Summarize(h *hdrhistogram.Histogram, clamped int64) ClassSummary {
	s := ClassSummary{Count: h.TotalCount(), Clamped: clamped}
	if s.Count == 0 {
		return s
	}
	ps := h.ValueAtPercentilesSlice([]float64{50, 90, 99, 99.9, 99.99}) // SummaryPercentiles
	s.MinUs = us(h.Min())
	s.MeanUs = h.Mean() / 1e3
	s.MaxUs = us(h.Max())
	s.P50Us, s.P90Us, s.P99Us, s.P999Us, s.P9999Us = us(ps[0]), us(ps[1]), us(ps[2]), us(ps[3]), us(ps[4])
	s.Intervals = map[string]stats.Interval{}
	for _, sp := range SummaryPercentiles {
		s.Intervals[sp.Label] = stats.PercentileInterval(h, sp.P)
	}
	return s
}

// Widen recomputes s's intervals from h, the histogram s summarises, for
// samples of which only every k-th counts (stats.ThinnedInterval); k of 0 or 1
// leaves s as it is.
func (s *ClassSummary) Widen(h *hdrhistogram.Histogram, k int) {
	if k == 0 || k == 1 || s.Count == 0 {
		return
	}
	for _, sp := range SummaryPercentiles {
		s.Intervals[sp.Label] = stats.ThinnedInterval(h, sp.P, k)
	}
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

// Summary summarises the measured totals of a Recorder. Field names are
// stable.
type Summary struct {
	StartTime time.Time `json:"start_time"` // the Recorder's start
	IntervalS float64   `json:"interval_s"` // interval length, seconds
	WarmupS   float64   `json:"warmup_s"`   // offset of the end of the warm-up, seconds
	// MeasuredS is the time from the end of the warm-up to the end of the
	// last closed interval (0 if none was measured).
	MeasuredS float64 `json:"measured_s"`
	// Classes maps each class name to the summary of its measured total.
	Classes map[string]ClassSummary `json:"classes"`
}

// Summary summarises every class's measured total.
func (r *Recorder) Summary() Summary {
	s := Summary{StartTime: r.start, IntervalS: r.interval.Seconds(), WarmupS: r.warmup.Seconds(), Classes: map[string]ClassSummary{}}
	for _, sp := range r.Spans() {
		if sp.Measured {
			s.MeasuredS = (sp.End - r.warmup).Seconds()
		}
	}
	for _, name := range r.Classes() {
		h, t, _ := r.total(name)
		cs := Summarize(h, t.clamped)
		cs.Dropped = t.dropped
		s.Classes[name] = cs
	}
	return s
}
