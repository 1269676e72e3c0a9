package results

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/reactorlab/reactorlab/results/record"
)

// The figures of report.md (WriteMarkdown), report.html (results/htmlreport)
// and the compare table are all formatted by results/figure, so one
// figure reads the same in each. Where a figure cannot be given, the
// reports say why in words (NoSamples, MetricResult.Gap, LatencyClasses'
// NoSamplesNote), never with a bare mark.

// NoSamples is what a report shows where a cell has no sample of a metric
// that other cells have.
const NoSamples = "no samples"

// NoMetricSamples is what a report shows instead of a cell's metric table
// when none of its metrics has a sample (no valid run).
const NoMetricSamples = "No metric has samples: the cell has no valid run to measure."

// Gap says, in words a reader understands, why a factor cell's metric has
// no comparison with the baseline: "n/a: baseline has no control p99.9
// samples" when the baseline has no value of it, "n/a: this cell has no
// … samples" when the cell has none; "" when both have values (the rank
// test ran, and Verdict is its outcome). label is the metric's label.
func (mr MetricResult) Gap(label string) string {
	switch {
	case mr.N == 0:
		return fmt.Sprintf("n/a: this cell has no %s samples", label)
	case mr.BaselineN == 0:
		return fmt.Sprintf("n/a: baseline has no %s samples", label)
	}
	return ""
}

// RatioGap says why a factor cell's metric that both it and the baseline
// have has no ratio, or "" when it has one: a ratio needs a pair (the
// cell's run and the baseline run before it) with both runs valid and a
// baseline value other than 0.
func (mr MetricResult) RatioGap() string {
	switch {
	case mr.Pairs > 0 && mr.Ratio != 0:
		return ""
	case mr.BaselineN > 0 && mr.BaselineMedian == 0:
		return "no ratio: the baseline's median is 0"
	}
	return "no ratio: no pair with both runs valid and a baseline value other than 0"
}

// LatencyClasses splits a cell's latency summaries into the classes with
// samples and those without (an empty histogram: a class the load
// generator set up and never used, such as control without control
// probes), each sorted. A report shows a row for each of the first and
// NoSamplesNote for the second, never a row of zeros.
func LatencyClasses(lat map[string]record.ClassSummary) (sampled, empty []string) {
	for _, class := range slices.Sorted(maps.Keys(lat)) {
		if lat[class].Count > 0 {
			sampled = append(sampled, class)
		} else {
			empty = append(empty, class)
		}
	}
	return sampled, empty
}

// NoSamplesNote is the sentence a report shows for latency classes without
// samples ("No samples in the valid runs' measured periods: control,
// stop."), "" for none.
func NoSamplesNote(empty []string) string {
	if len(empty) == 0 {
		return ""
	}
	return fmt.Sprintf("No samples in the valid runs' measured periods: %s.", strings.Join(empty, ", "))
}

// HeadlineMetrics are the report's summary columns: the catalogue's Gate
// metrics that at least one cell of a has samples of, in catalogue order.
func HeadlineMetrics(a *Analysis) []Metric {
	present := presentMetrics(a)
	var out []Metric
	for _, m := range Metrics {
		if m.Gate && present[m.Name] {
			out = append(out, m)
		}
	}
	return out
}

// presentMetrics are the metrics that at least one cell of a has samples
// of.
func presentMetrics(a *Analysis) map[string]bool {
	out := map[string]bool{}
	for _, c := range a.Cells {
		for _, mr := range c.Metrics {
			if mr.N > 0 {
				out[mr.Name] = true
			}
		}
	}
	return out
}
