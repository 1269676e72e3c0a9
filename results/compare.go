package results

import (
	"errors"

	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/reactorlab/reactorlab/results/figure"
	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/results/stats"
)

// DefaultThreshold is CompareOptions.Threshold's default: a change must be
// beyond 10% in the bad direction to count as a regression.
const DefaultThreshold = 0.10

// CompareOptions tune Compare. The zero value means the defaults.
type CompareOptions struct {
	// Threshold is the relative change in a metric's bad direction beyond
	// which a significant change is a regression: 0.10 flags throughput
	// below 0.9× and latency above 1.1× the old median. 0 means
	// DefaultThreshold; it must not be negative.
	Threshold float64
	// Metrics are the catalogue names to compare; nil means the catalogue's
	// Gate metrics.
	Metrics []string
	// Alpha is the family-wise significance level over all of the
	// comparison's tests; 0 means DefaultAlpha. It must be below 1.
	Alpha float64
}

// Comparison is an old run directory's manifest compared with a new one's,
// cell by cell (cells matched by ID and configuration) and metric by
// metric. Every cell of either manifest is in exactly one of Compared and
// NotCompared (as a cell-level entry, Metric ""); NotCompared also lists
// the metrics of compared cells that only one side has values of.
type Comparison struct {
	OldSpec, NewSpec     string
	OldCommit, NewCommit string
	Threshold, Alpha     float64
	Metrics              []string
	// Rows are the (cell, metric) comparisons, in the new manifest's cell
	// order and the catalogue's metric order.
	Rows []CompareRow
	// Compared are the cells judged, in the new manifest's order: in both
	// manifests with the same configuration, and with at least one metric
	// tested (values on both sides) or a Failure.
	Compared []string
	// NotCompared is what could not be compared, and why: cells on one
	// side only, cells whose configuration differs, cells with no metric
	// that has values on both sides, and metrics of a compared cell (both
	// sides with valid runs) that have values on one side only. None is a
	// regression.
	NotCompared []NotCompared
	// Failures are regressions not tied to one metric's comparison: a cell
	// valid in the old runs with no valid run in the new, and new runs with
	// anomalies.
	Failures []CellProblem
	// Notes are warnings for the reader, above all when the sample sizes
	// make significance, and so the gate, impossible.
	Notes []string
	// CannotFire are the compared cells where the gate cannot fire: with
	// their valid runs a side, no p-value can be significant after Holm's
	// correction, so no regression can be found there (Notes says how
	// many runs they would need).
	CannotFire []string
}

// CompareRow is one metric of one cell, old against new.
type CompareRow struct {
	Cell, Metric string
	// OldN and NewN count the valid runs with a value; the medians are of
	// those values (0 without any). Ratio is NewMedian/OldMedian, 0 when
	// OldMedian is 0.
	OldN, NewN           int
	OldMedian, NewMedian float64
	Ratio                float64
	// P is the two-sided rank test's p-value (new against old), PAdjusted
	// after Holm–Bonferroni over every row of the comparison that was
	// tested; both 0 when a side has no values.
	P, PAdjusted float64
	Verdict      Verdict
	// Tested: both sides have values, and the rank test ran; without,
	// Verdict is inconclusive.
	Tested bool
	// Regression: the verdict is worse and the new median is beyond the
	// threshold in the bad direction.
	Regression bool
	// Intervals, for a latency percentile, says whether the 95% intervals
	// of the percentile over each side's merged histograms overlap
	// (IntervalsOverlap) or lie apart (IntervalsApart), each widened where
	// its runs' samples were correlated (Manifest.CellThinning); empty
	// where a side has no histogram or too few samples for the percentile. The rank
	// test judges the runs' medians; this, the samples pooled.
	Intervals string
}

// addIntervals sets Intervals on the latency percentile rows from each
// side's merged cell histograms (CellHistograms of the run directories);
// where a side's cannot be read, a note says so and no row has one.
func (c *Comparison) addIntervals(oldDir string, oldM *Manifest, newDir string, newM *Manifest) {
	if !slices.ContainsFunc(c.Rows, func(r CompareRow) bool { _, _, ok := latencyPercentile(r.Metric); return ok && r.Tested }) {
		return // nothing to put an interval beside: the histograms are not read
	}
	oldH, err := CellHistograms(oldDir, oldM)
	if err == nil {
		var newH map[string]map[string]*hdrhistogram.Histogram
		if newH, err = CellHistograms(newDir, newM); err == nil {
			for i := range c.Rows {
				r := &c.Rows[i]
				class, _, _ := latencyPercentile(r.Metric)
				r.Intervals = rowIntervals(*r, oldH, newH, oldM.CellThinning(r.Cell, class), newM.CellThinning(r.Cell, class))
			}
			return
		}
	}
	c.Notes = append(c.Notes, fmt.Sprintf("no intervals beside the latency verdicts: %v", err))
}

// rowIntervals is r's Intervals from the two sides' histograms, each
// widened by its runs' thinning (Manifest.CellThinning).
func rowIntervals(r CompareRow, oldH, newH map[string]map[string]*hdrhistogram.Histogram, oldK, newK int) string {
	class, label, ok := latencyPercentile(r.Metric)
	if !ok {
		return ""
	}
	oh, nh := oldH[r.Cell][class], newH[r.Cell][class]
	if oh == nil || nh == nil {
		return ""
	}
	p := 0.0
	for _, sp := range record.SummaryPercentiles {
		if sp.Label == label {
			p = sp.P
		}
	}
	a, b := stats.ThinnedInterval(oh, p, oldK), stats.ThinnedInterval(nh, p, newK)
	switch {
	case a.TooFew || b.TooFew:
		return ""
	case a.HiUs < b.LoUs || b.HiUs < a.LoUs:
		return IntervalsApart
	}
	return IntervalsOverlap
}

// NotComparedReason says why a cell, or a metric of a cell, was not
// compared.
type NotComparedReason string

// The reasons of NotCompared.
const (
	// OnlyOld and OnlyNew: the cell ID is in one manifest only.
	OnlyOld NotComparedReason = "only_old"
	OnlyNew NotComparedReason = "only_new"
	// ConfigDiffers: the cell is in both with another configuration; its
	// Changes say how.
	ConfigDiffers NotComparedReason = "config_differs"
	// NoValues: the cell is in both with the same configuration, but no
	// metric compared has values on both sides (no valid run on a side,
	// or other metrics), and it has no Failure.
	NoValues NotComparedReason = "no_values"
	// OneSided: a metric of a compared cell has values on one side only.
	OneSided NotComparedReason = "one_sided"
)

// NotCompared is a cell, or one metric of a cell (Metric set, Why
// OneSided), that was not compared: why, as a code and in words.
type NotCompared struct {
	Cell, Metric string
	Why          NotComparedReason
	// Changes are the configuration's differences, for ConfigDiffers.
	Changes []ConfigChange
	// Reason is Why for a reader: "only in the old runs",
	// "configuration differs: hot \"4\" → \"8\"", …
	Reason string
}

// ConfigChange is one key of a cell's configuration that differs between
// the old and the new manifest; Old or New is nil where the key is absent.
type ConfigChange struct {
	Key      string
	Old, New *string
}

// CellProblem is a cell and what is wrong with it.
type CellProblem struct {
	Cell, Reason string
}

// Compare compares the valid runs of each cell present in both manifests
// with the same configuration: for each metric of opt.Metrics, the old
// values against the new (for the baseline, all its runs), with the
// two-sided Mann–Whitney U test and Holm–Bonferroni over all the rows.
// What it could not compare is in NotCompared; the cells of two unrelated
// runs all end up there, and Compared is then empty (NothingCompared). It
// returns an error only for bad options or a nil manifest.
func Compare(oldM, newM *Manifest, opt CompareOptions) (*Comparison, error) {
	if oldM == nil || newM == nil {
		return nil, errors.New("compare: a manifest is missing")
	}
	opt, metrics, err := compareDefaults(opt)
	if err != nil {
		return nil, err
	}
	c := &Comparison{
		OldSpec: oldM.Spec.Name, NewSpec: newM.Spec.Name, OldCommit: oldM.Tool.Commit, NewCommit: newM.Tool.Commit,
		Threshold: opt.Threshold, Alpha: opt.Alpha,
	}
	for _, m := range metrics {
		c.Metrics = append(c.Metrics, m.Name)
	}
	if oldM.Spec.Name != newM.Spec.Name {
		c.Notes = append(c.Notes, fmt.Sprintf("the specs differ (%q, %q): cells are matched by ID", oldM.Spec.Name, newM.Spec.Name))
	}

	for _, oc := range oldM.Cells {
		if _, ok := newM.Cell(oc.ID); !ok {
			c.NotCompared = append(c.NotCompared, NotCompared{Cell: oc.ID, Why: OnlyOld, Reason: "only in the old runs"})
		}
	}
	var tests rowTests
	for _, nc := range newM.Cells {
		c.compareCell(oldM, newM, nc, metrics, &tests)
	}
	c.judge(tests)
	return c, nil
}

// compareDefaults checks opt, fills in the default threshold and alpha,
// and returns the metrics to compare: opt.Metrics, or the gate's.
func compareDefaults(opt CompareOptions) (CompareOptions, []Metric, error) {
	if opt.Threshold < 0 || math.IsNaN(opt.Threshold) {
		return opt, nil, fmt.Errorf("compare: threshold %v: must be a relative change ≥ 0", opt.Threshold)
	}
	if opt.Threshold == 0 {
		opt.Threshold = DefaultThreshold
	}
	if opt.Alpha < 0 || opt.Alpha >= 1 || math.IsNaN(opt.Alpha) {
		return opt, nil, fmt.Errorf("compare: alpha %v: must be in (0, 1)", opt.Alpha)
	}
	if opt.Alpha == 0 {
		opt.Alpha = DefaultAlpha
	}
	var metrics []Metric
	if opt.Metrics == nil {
		for _, m := range Metrics {
			if m.Gate {
				metrics = append(metrics, m)
			}
		}
		return opt, metrics, nil
	}
	for _, name := range opt.Metrics {
		m, ok := MetricByName(name)
		if !ok {
			return opt, nil, fmt.Errorf("compare: unknown metric %q (accepted: %s)", name, strings.Join(metricNames(), ", "))
		}
		metrics = append(metrics, m)
	}
	return opt, metrics, nil
}

// rowTests are the rank tests of the compared rows, in the order of
// c.Rows: rows[i] is the index in c.Rows of the row tests[i] tested.
type rowTests struct {
	rows  []int
	tests []stats.RankTest
}

// compareCell compares the new cell nc with the old cell of the same ID:
// it records the cell as not compared (absent from the old runs, or
// configured otherwise), or its failures, its rows (queuing their tests in
// tests) and whether it was compared.
func (c *Comparison) compareCell(oldM, newM *Manifest, nc CellInfo, metrics []Metric, tests *rowTests) {
	oc, ok := oldM.Cell(nc.ID)
	if !ok {
		c.NotCompared = append(c.NotCompared, NotCompared{Cell: nc.ID, Why: OnlyNew, Reason: "only in the new runs"})
		return
	}
	if changes := configChanges(oc.Config, nc.Config); len(changes) > 0 {
		c.NotCompared = append(c.NotCompared, NotCompared{Cell: nc.ID, Why: ConfigDiffers, Changes: changes,
			Reason: "configuration differs: " + changesText(changes)})
		return
	}
	oldVals, oldValid, oldContended := cellValues(oldM, nc.ID)
	newVals, newValid, newContended := cellValues(newM, nc.ID)
	if oldContended+newContended > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("cell %s: %d old and %d new valid runs were contended (others took their CPUs): left out", nc.ID, oldContended, newContended))
	}
	failed := false
	if oldValid > 0 && newValid == 0 && newContended == 0 {
		c.Failures = append(c.Failures, CellProblem{nc.ID, fmt.Sprintf("%d valid old runs, no valid new run", oldValid)})
		failed = true
	}
	if n, most := anomalousRuns(newM, nc.ID); n > 0 {
		c.Failures = append(c.Failures, CellProblem{nc.ID, fmt.Sprintf("%d new runs with anomalies (at most %s)", n, figure.Value(most))})
		failed = true
	}
	first := len(c.Rows)
	cellTested := c.addRows(nc.ID, metrics, oldVals, newVals, tests)
	switch {
	case cellTested == 0 && !failed:
		c.NotCompared = append(c.NotCompared, NotCompared{Cell: nc.ID, Why: NoValues, Reason: noValuesText(oldValid, newValid, c.Metrics)})
	case oldValid > 0 && newValid > 0:
		c.Compared = append(c.Compared, nc.ID)
		c.addOneSided(nc.ID, c.Rows[first:])
	default:
		c.Compared = append(c.Compared, nc.ID)
	}
}

// addRows appends a row for each metric with values on either side, and
// queues a test for those with values on both; it returns how many it
// queued.
func (c *Comparison) addRows(cell string, metrics []Metric, oldVals, newVals map[string][]float64, tests *rowTests) (tested int) {
	for _, m := range metrics {
		ov, nv := oldVals[m.Name], newVals[m.Name]
		if len(ov) == 0 && len(nv) == 0 {
			continue
		}
		row := CompareRow{Cell: cell, Metric: m.Name, OldN: len(ov), NewN: len(nv), Verdict: VerdictInconclusive}
		if len(ov) > 0 {
			row.OldMedian = median(ov)
		}
		if len(nv) > 0 {
			row.NewMedian = median(nv)
		}
		if r := row.NewMedian / row.OldMedian; row.OldMedian != 0 && !math.IsInf(r, 0) {
			row.Ratio = r
		}
		if len(ov) > 0 && len(nv) > 0 {
			row.Tested = true
			tested++
			tests.rows = append(tests.rows, len(c.Rows))
			tests.tests = append(tests.tests, stats.MannWhitney(nv, ov))
		}
		c.Rows = append(c.Rows, row)
	}
	return tested
}

// addOneSided records as not compared (OneSided) each of the cell's rows
// that has values on one side only.
func (c *Comparison) addOneSided(cell string, rows []CompareRow) {
	for _, row := range rows {
		if row.Tested {
			continue
		}
		m, _ := MetricByName(row.Metric)
		side, other, n := "old", "new", row.OldN
		if row.OldN == 0 {
			side, other, n = "new", "old", row.NewN
		}
		c.NotCompared = append(c.NotCompared, NotCompared{Cell: cell, Metric: row.Metric, Why: OneSided,
			Reason: fmt.Sprintf("%s: values in %d %s runs, none in the %s", m.Label, n, side, other)})
	}
}

// judge applies Holm over all the tested rows, sets their p-values,
// verdicts and regressions, and warns of the cells where no test could be
// significant (CannotFire).
func (c *Comparison) judge(t rowTests) {
	tested, tests := t.rows, t.tests
	ps := make([]float64, len(tests))
	for i, t := range tests {
		ps[i] = t.P
	}
	adj := stats.HolmAdjust(ps)
	family := len(tests)
	gate := make([]gateRow, 0, len(tested))
	for i, ri := range tested {
		row := &c.Rows[ri]
		m, _ := MetricByName(row.Metric)
		row.P, row.PAdjusted = tests[i].P, adj[i]
		row.Verdict = verdict(m.Better, tests[i], adj[i], family, c.Alpha)
		row.Regression = row.Verdict == VerdictWorse && beyond(m.Better, row.OldMedian, row.NewMedian, c.Threshold)
		gate = append(gate, gateRow{Cell: row.Cell, OldN: row.OldN, NewN: row.NewN})
	}
	var note string
	c.CannotFire, note = gateCannotFire(gate, c.Alpha)
	if note != "" {
		c.Notes = append(c.Notes, note)
	}
}

// gateRow is one test of the gate: a metric of a cell, with OldN and NewN
// valid runs a side.
type gateRow struct {
	Cell       string
	OldN, NewN int
}

// gateCannotFire finds the cells where the gate cannot fire among the
// tests rows, one Holm family at alpha: a cell with a row whose smallest
// possible p-value, times the family's size, exceeds alpha. It returns
// them in the order of rows and the warning that says so and how many
// runs a side would let them fire ("" when there are none).
func gateCannotFire(rows []gateRow, alpha float64) (cells []string, note string) {
	family := len(rows)
	all := map[string]bool{}
	smallest := math.MaxInt
	for _, r := range rows {
		all[r.Cell] = true
		smallest = min(smallest, r.OldN, r.NewN)
		if stats.MinPValue(r.OldN, r.NewN)*float64(family) > alpha && !slices.Contains(cells, r.Cell) {
			cells = append(cells, r.Cell)
		}
	}
	if len(cells) == 0 {
		return nil, ""
	}
	need := 0
	for r := 1; r <= 1000; r++ {
		if stats.MinPValue(r, r)*float64(family) <= alpha {
			need = r
			break
		}
	}
	what := fmt.Sprintf("cells %s", strings.Join(cells, ", "))
	if len(cells) == len(all) {
		what = "every cell"
	}
	return cells, fmt.Sprintf("WARNING: THE GATE CANNOT FIRE for %s: with as few as %s a side and %s, "+
		"the smallest possible p-value times %d exceeds alpha %g, so no change there can be significant after Holm's correction; "+
		"they need at least %s on each side (or fewer metrics)", what, figure.Counted(smallest, "valid run", "valid runs"),
		figure.Counted(family, "comparison", "comparisons"), family, alpha, figure.Counted(need, "valid run", "valid runs"))
}

// beyond reports whether new is beyond old by more than the relative
// threshold in the metric's bad direction.
func beyond(better Better, old, new, threshold float64) bool {
	switch better {
	case LowerIsBetter:
		return new > old*(1+threshold)
	case HigherIsBetter:
		return new < old*(1-threshold)
	}
	return false
}

// NothingCompared reports that no cell was compared: the gate has nothing
// to judge, and "no regression" would mean nothing.
func (c *Comparison) NothingCompared() bool { return len(c.Compared) == 0 }

// NothingJudged reports that cells were compared, none regressed, and the
// gate cannot fire in any of them (CannotFire holds every compared cell):
// no regression could have been found, so "no regression" would mean
// nothing.
func (c *Comparison) NothingJudged() bool {
	return !c.NothingCompared() && c.Regressions() == 0 && len(c.CannotFire) == len(c.Compared)
}

// NotComparedCounts counts NotCompared's cell-level entries and its
// metric-level (OneSided) entries.
func (c *Comparison) NotComparedCounts() (cells, metrics int) {
	for _, nc := range c.NotCompared {
		if nc.Metric == "" {
			cells++
		} else {
			metrics++
		}
	}
	return cells, metrics
}

// Regressions counts the regressions: rows marked Regression and Failures.
func (c *Comparison) Regressions() int {
	n := len(c.Failures)
	for _, r := range c.Rows {
		if r.Regression {
			n++
		}
	}
	return n
}

// cellValues are the finite catalogue values of the cell's valid runs, by
// metric, and the number of valid runs.
func cellValues(m *Manifest, cell string) (vals map[string][]float64, valid, contended int) {
	out := map[string][]float64{}
	for _, r := range canonicalRuns(m.Runs) {
		if r.Cell != cell || !r.Valid {
			continue
		}
		if !r.Comparable() {
			contended++
			continue
		}
		valid++
		for name, v := range catalogueValues(&r, cell, nil) {
			out[name] = append(out[name], v)
		}
	}
	return out, valid, contended
}

// anomalousRuns counts the cell's runs, valid or not, with anomalies > 0,
// and their largest count.
func anomalousRuns(m *Manifest, cell string) (int, float64) {
	n, most := 0, 0.0
	for _, r := range m.Runs {
		if v := r.Metrics[MetricAnomalies]; r.Cell == cell && v > 0 {
			n++
			most = max(most, v)
		}
	}
	return n, most
}

// configChanges are the keys of two configurations whose values differ,
// sorted; none if they are equal.
func configChanges(a, b map[string]string) []ConfigChange {
	keys := slices.Sorted(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []ConfigChange
	for _, k := range keys {
		av, aok := a[k]
		bv, bok := b[k]
		if aok == bok && av == bv {
			continue
		}
		ch := ConfigChange{Key: k}
		if aok {
			ch.Old = &av
		}
		if bok {
			ch.New = &bv
		}
		out = append(out, ch)
	}
	return out
}

// changesText describes configuration changes: `hot "4" → "8", timer
// absent → "deadline"`.
func changesText(changes []ConfigChange) string {
	q := func(v *string) string {
		if v == nil {
			return "absent"
		}
		return strconv.Quote(*v)
	}
	var parts []string
	for _, ch := range changes {
		parts = append(parts, fmt.Sprintf("%s %s → %s", ch.Key, q(ch.Old), q(ch.New)))
	}
	return strings.Join(parts, ", ")
}

func metricNames() []string {
	var out []string
	for _, m := range Metrics {
		out = append(out, m.Name)
	}
	return out
}
