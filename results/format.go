package results

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The figures of report.md (WriteMarkdown), report.html (results/htmlreport)
// and the compare table are all formatted here, so one figure reads the
// same in each: FormatValue for measured values and medians, FormatRatio
// and FormatRange for ratios and ranges, FormatP for p-values, FormatCount
// for counts. Where a figure cannot be given, the reports say why in words
// (NoSamples, MetricResult.Gap, LatencyClasses' NoSamplesNote), never with
// a bare mark.

// NotAvailable is what a table shows in a column whose figure does not
// exist, when the row says why elsewhere (a verdict column's Gap, or the
// metric's n).
const NotAvailable = "–"

// NoSamples is what a report shows where a cell has no sample of a metric
// that other cells have.
const NoSamples = "no samples"

// NoMetricSamples is what a report shows instead of a cell's metric table
// when none of its metrics has a sample (no valid run).
const NoMetricSamples = "No metric has samples: the cell has no valid run to measure."

// FormatValue formats v with 3 significant figures, without an exponent,
// with thousands separators from 1,000 up ("252,000", "18.5", "0.00123");
// NotAvailable ("–") for NaN or an infinity.
func FormatValue(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return NotAvailable
	}
	if v == 0 {
		return "0"
	}
	r := roundSignificant(v, 3)
	if math.Abs(r) >= 1000 {
		return groupThousands(strconv.FormatFloat(r, 'f', 0, 64))
	}
	decimals := max(0, 2-int(math.Floor(math.Log10(math.Abs(r)))))
	return strconv.FormatFloat(r, 'f', decimals, 64)
}

// FormatRatio formats a ratio as "×" and FormatValue's 3 significant
// figures ("×1.25", "×0.980"); "×–" for 0 (no ratio) or a value that is
// not finite.
func FormatRatio(r float64) string {
	if r == 0 {
		return "×" + NotAvailable
	}
	return "×" + FormatValue(r)
}

// FormatRange formats a range of values as "lo–hi" with FormatValue
// ("0.950–1.04", "98,000–103,000").
func FormatRange(lo, hi float64) string { return FormatValue(lo) + "–" + FormatValue(hi) }

// FormatP formats a p-value with 2 significant figures ("0.036",
// "9.1e-05"); NotAvailable for NaN.
func FormatP(p float64) string {
	if math.IsNaN(p) {
		return NotAvailable
	}
	return strconv.FormatFloat(p, 'g', 2, 64)
}

// FormatCount formats a count exactly, with thousands separators
// ("1,234,567"): a count is not rounded.
func FormatCount(n int64) string { return groupThousands(strconv.FormatInt(n, 10)) }

// WithUnit is a figure followed by its unit ("18.5 µs"), the figure alone
// for a plain number.
func WithUnit(figure, unit string) string {
	if unit == "" {
		return figure
	}
	return figure + " " + unit
}

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
func LatencyClasses(lat map[string]ClassSummary) (sampled, empty []string) {
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

func roundSignificant(v float64, digits int) float64 {
	scale := math.Pow(10, float64(digits-1)-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}

// groupThousands puts commas into the integer digits string s ("-1234567"
// → "-1,234,567").
func groupThousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, d := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return sign + b.String()
}
