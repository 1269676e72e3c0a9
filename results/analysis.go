package results

import (
	"fmt"
	"slices"
	"strings"

	"github.com/reactorlab/reactorlab/results/record"
)

// Verdict is the outcome of one comparison of a cell's metric with the
// baseline's (or, in Compare, of a new run's with an old run's).
type Verdict string

const (
	// VerdictBetter and VerdictWorse: the rank test's adjusted p-value is
	// below alpha and the metric has a direction.
	VerdictBetter Verdict = "better"
	VerdictWorse  Verdict = "worse"
	// VerdictDifferent: significant, for a Neutral metric.
	VerdictDifferent Verdict = "different"
	// VerdictSame: the test could have found a difference at alpha with
	// these sample sizes, and did not.
	VerdictSame Verdict = "no significant difference"
	// VerdictInconclusive: the sample sizes cannot reach alpha after the
	// correction, whatever the values (too few repeats), or a side has no
	// valid run.
	VerdictInconclusive Verdict = "inconclusive"
)

// Analysis is what a run directory's runs say, cell by cell, against the
// baseline. It is computed from the manifest and the cells' merged
// histograms only, so it does not depend on how the runs were sharded.
type Analysis struct {
	Spec    string `json:"spec"`
	Repeats int    `json:"repeats"`
	// Method names the rank test, its sides, the correction for multiple
	// comparisons and what makes up each sample, for the reader.
	Method string  `json:"method"`
	Alpha  float64 `json:"alpha"`
	// Cells are in manifest order, baseline first.
	Cells []CellAnalysis `json:"cells"`
	// Notes are warnings a reader must see (invalid runs, too few repeats
	// for any verdict, loopback runs, a saturated load generator).
	Notes []string `json:"notes,omitempty"`
}

// CellAnalysis is one cell's figures.
type CellAnalysis struct {
	ID       string `json:"id"`
	Factor   string `json:"factor,omitempty"`
	Value    string `json:"value,omitempty"`
	Describe string `json:"describe"`
	// Runs counts the cell's runs, ValidRuns the valid ones not contended
	// (the only ones analysed); Invalid are the reasons of the invalid
	// ones, each prefixed with its repeat.
	Runs      int      `json:"runs"`
	ValidRuns int      `json:"valid_runs"`
	Invalid   []string `json:"invalid,omitempty"`
	// Contended are the valid runs left out because their CPUs went to
	// other processes (RunRecord.Contended), each prefixed with its
	// repeat; ValidRuns does not count them.
	Contended []string `json:"contended,omitempty"`
	// Flagged are the analysed runs' failed gates (RunRecord.Flagged),
	// each prefixed with its repeat.
	Flagged []string `json:"flagged,omitempty"`
	// Limits counts the valid runs by the side that limited them
	// ("loadgen", "server", "neither"; MetricLoadgenLimited and its
	// siblings); nil when no run says.
	Limits map[string]int `json:"limits,omitempty"`
	// Metrics are in catalogue order, for the metrics the runs have.
	Metrics []MetricResult `json:"metrics"`
	// Latency summarises the merged measured histograms of the analysed
	// runs, per class (data, control, stop, ...), its intervals widened
	// where a run's samples of the class were correlated
	// (Manifest.CellThinning).
	Latency map[string]record.ClassSummary `json:"latency,omitempty"`
}

// MetricResult is one metric of one cell: its values across the valid
// runs, and, for a factor cell, how it compares with the baseline.
type MetricResult struct {
	Name   string  `json:"name"`
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// The comparison, zero for the baseline cell. BaselineN and
	// BaselineMedian describe the baseline sample the test used. Ratio is
	// the median of the per-pair ratios (this cell's run over the baseline
	// run just before it), RatioMin and RatioMax their range, Pairs how many
	// pairs had both runs valid.
	BaselineN      int     `json:"baseline_n,omitempty"`
	BaselineMedian float64 `json:"baseline_median,omitempty"`
	Ratio          float64 `json:"ratio,omitempty"`
	RatioMin       float64 `json:"ratio_min,omitempty"`
	RatioMax       float64 `json:"ratio_max,omitempty"`
	Pairs          int     `json:"pairs,omitempty"`
	// P is the rank test's two-sided p-value, PAdjusted after the
	// correction for multiple comparisons.
	P         float64 `json:"p,omitempty"`
	PAdjusted float64 `json:"p_adjusted,omitempty"`
	Verdict   Verdict `json:"verdict,omitempty"`
	// Intervals, for a latency percentile of a factor cell, compares the
	// 95% confidence intervals of that percentile in the cell's and the
	// baseline's merged histograms (widened where their runs' samples were
	// correlated: record.ClassSummary.Widen): IntervalsOverlap or IntervalsApart;
	// empty where either has too few samples for it, or no histogram.
	Intervals string `json:"intervals,omitempty"`
}

// What MetricResult.Intervals says. Intervals apart are a difference the
// merged samples show by themselves; overlapping ones are no evidence
// either way (two 95% intervals may overlap around a real difference).
const (
	IntervalsOverlap = "overlap"
	IntervalsApart   = "apart"
)

// IntervalNote is what a table prints beside the verdict for mr's
// intervals: "merged p99 intervals overlap", or "" when there is none.
func (mr MetricResult) IntervalNote() string {
	if mr.Intervals == "" {
		return ""
	}
	_, label, _ := latencyPercentile(mr.Name)
	return "merged " + label + " 95% intervals " + mr.Intervals
}

// latencyPercentile maps a latency percentile metric's name to its
// histogram class and percentile label ("data_p999" → "data", "p99.9").
func latencyPercentile(name string) (class, label string, ok bool) {
	i := strings.LastIndex(name, "_p")
	if i < 0 {
		return "", "", false
	}
	class, suffix := name[:i], name[i+2:]
	for _, sp := range record.SummaryPercentiles {
		if strings.ReplaceAll(strings.TrimPrefix(sp.Label, "p"), ".", "") == suffix {
			return class, sp.Label, true
		}
	}
	return "", "", false
}

// compareIntervals sets Intervals on every latency percentile metric of
// the factor cells whose class both the cell and the baseline (cells[0])
// have merged histograms of, with enough samples for that percentile.
func compareIntervals(cells []CellAnalysis) {
	if len(cells) < 2 {
		return
	}
	base := cells[0]
	for ci := range cells[1:] {
		c := &cells[ci+1]
		for mi := range c.Metrics {
			mr := &c.Metrics[mi]
			class, label, ok := latencyPercentile(mr.Name)
			if !ok {
				continue
			}
			a, aok := c.Latency[class].Intervals[label]
			b, bok := base.Latency[class].Intervals[label]
			if !aok || !bok || a.TooFew || b.TooFew {
				continue
			}
			mr.Intervals = IntervalsOverlap
			if a.HiUs < b.LoUs || b.HiUs < a.LoUs {
				mr.Intervals = IntervalsApart
			}
		}
	}
}

// LimitText says which side limited the cell's valid runs, the most
// frequent first: "server 4/4", "loadgen 3/4, neither 1/4"; "" when no run
// says.
func (c CellAnalysis) LimitText() string {
	sides := []string{"loadgen", "server", "neither"}
	slices.SortStableFunc(sides, func(a, b string) int { return c.Limits[b] - c.Limits[a] })
	var parts []string
	for _, side := range sides {
		if n := c.Limits[side]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", side, n, c.ValidRuns))
		}
	}
	return strings.Join(parts, ", ")
}
