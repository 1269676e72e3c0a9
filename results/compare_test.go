package results_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/results"
)

var compareFactors = []synthCell{{"hot", "16"}, {"reactor", "et"}}

// everyCell scales metric by f in every cell of compareFactors and the
// baseline.
func everyCell(metric string, f float64) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, id := range []string{"baseline", "hot=16", "reactor=et"} {
		out[id] = map[string]float64{metric: f}
	}
	return out
}

// tableOf is c's WriteTable text.
func tableOf(t *testing.T, c *results.Comparison) string {
	t.Helper()
	var buf bytes.Buffer
	if err := c.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestComparePlantedRegression: a new run whose throughput is 0.7× the
// old's, 6 repeats, is flagged in every cell, and the table ends with the
// count: the gate fires.
func TestComparePlantedRegression(t *testing.T) {
	oldM := synthManifest("gate", 6, compareFactors, noisy(31, typicalMeans, 0.03, nil))
	newM := synthManifest("gate", 6, compareFactors, noisy(32, typicalMeans, 0.03, everyCell(results.MetricThroughput, 0.7)))
	c, err := results.Compare(oldM, newM, results.CompareOptions{Threshold: 0.10})
	if err != nil {
		t.Fatal(err)
	}
	if c.Regressions() != 3 {
		t.Errorf("%d regressions, want 3 (throughput of each cell)", c.Regressions())
	}
	for _, r := range c.Rows {
		if want := r.Metric == results.MetricThroughput; r.Regression != want {
			t.Errorf("%s %s: regression %v (%+v)", r.Cell, r.Metric, r.Regression, r)
		}
	}
	table := tableOf(t, c)
	if got := lastLine(table); got != "3 regressions beyond ±10%" {
		t.Errorf("last line %q\n%s", got, table)
	}
	if strings.Count(table, "REGRESSION") != 3 || strings.Contains(table, "WARNING") {
		t.Errorf("table:\n%s", table)
	}
}

// TestCompareSameDistribution: old and new drawn from one distribution, for
// several seeds, give no regression.
func TestCompareSameDistribution(t *testing.T) {
	for seed := uint64(40); seed < 50; seed++ {
		oldM := synthManifest("same", 6, compareFactors, noisy(seed, typicalMeans, 0.05, nil))
		newM := synthManifest("same", 6, compareFactors, noisy(seed+1000, typicalMeans, 0.05, nil))
		c, err := results.Compare(oldM, newM, results.CompareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		table := tableOf(t, c)
		if c.Regressions() != 0 || lastLine(table) != "no significant regression beyond ±10%" {
			t.Errorf("seed %d: %d regressions\n%s", seed, c.Regressions(), table)
		}
	}
}

// TestCompareBelowThreshold: a significant 5% rise of the data p99 is
// "worse" but not a regression at a 10% threshold, and is one at 2%.
func TestCompareBelowThreshold(t *testing.T) {
	oldM := synthManifest("small", 8, compareFactors, noisy(51, typicalMeans, 0.005, nil))
	newM := synthManifest("small", 8, compareFactors, noisy(52, typicalMeans, 0.005, everyCell(results.MetricDataP99, 1.05)))
	for _, c := range []struct {
		threshold float64
		want      int
	}{{0.10, 0}, {0.02, 3}} {
		cmp, err := results.Compare(oldM, newM, results.CompareOptions{Threshold: c.threshold})
		if err != nil {
			t.Fatal(err)
		}
		worse := 0
		for _, r := range cmp.Rows {
			if r.Metric == results.MetricDataP99 && r.Verdict == results.VerdictWorse {
				worse++
			}
		}
		if worse != 3 || cmp.Regressions() != c.want {
			t.Errorf("threshold %v: %d worse, %d regressions; want 3, %d", c.threshold, worse, cmp.Regressions(), c.want)
		}
	}
}

// TestCompareCellsAndFailures: cells on one side only or with another
// configuration are listed as not compared (not an error, not a
// regression); a cell valid before with no valid new run, and new runs with
// anomalies, are regressions.
func TestCompareCellsAndFailures(t *testing.T) {
	oldM := synthManifest("cells", 4, []synthCell{{"hot", "16"}, {"reactor", "et"}, {"timer", "deadline"}}, noisy(61, typicalMeans, 0.03, nil))
	newM := synthManifest("cells", 4, []synthCell{{"hot", "16"}, {"reactor", "et"}, {"hot", "1"}}, noisy(62, typicalMeans, 0.03, nil))
	newM.Cells[2].Config["callback"] = "50us" // reactor=et now differs
	for i := range newM.Runs {
		r := &newM.Runs[i]
		if r.Cell == "hot=16" {
			r.Valid, r.Invalid = false, []string{"anomalies"}
			r.Metrics[results.MetricAnomalies] = 2
		}
	}
	c, err := results.Compare(oldM, newM, results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := tableOf(t, c)
	for _, want := range []string{
		"timer=deadline: only in the old runs", "hot=1: only in the new runs", `reactor=et: configuration differs: callback "0" → "50us"`,
		"REGRESSION hot=16: 4 valid old runs, no valid new run", "REGRESSION hot=16: 4 new runs with anomalies (at most 2.00)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if c.Regressions() != 2 || lastLine(out) != "2 regressions beyond ±10%; not compared: 3 cells" {
		t.Errorf("%d regressions\n%s", c.Regressions(), out)
	}
	// The same as data: each cell is compared or not, and why.
	if got := strings.Join(c.Compared, ","); got != "baseline,hot=16" {
		t.Errorf("compared %q, want baseline,hot=16 (hot=16 judged by its validity)", got)
	}
	want := map[string]results.NotComparedReason{"timer=deadline": results.OnlyOld, "hot=1": results.OnlyNew, "reactor=et": results.ConfigDiffers}
	if len(c.NotCompared) != len(want) {
		t.Errorf("not compared: %+v", c.NotCompared)
	}
	for _, nc := range c.NotCompared {
		if want[nc.Cell] != nc.Why || nc.Metric != "" {
			t.Errorf("not compared %+v, want %s", nc, want[nc.Cell])
		}
		if nc.Why == results.ConfigDiffers {
			if len(nc.Changes) != 1 || nc.Changes[0].Key != "callback" || *nc.Changes[0].Old != "0" || *nc.Changes[0].New != "50us" {
				t.Errorf("changes %+v", nc.Changes)
			}
		}
	}
	if cells, metrics := c.NotComparedCounts(); cells != 3 || metrics != 0 || c.NothingCompared() {
		t.Errorf("not compared: %d cells, %d metrics; nothing compared %v", cells, metrics, c.NothingCompared())
	}
}

// TestCompareUnrelatedRuns: two runs of different specs, whose cells share
// no ID and configuration, compare nothing, and say so instead of "no
// significant regression".
func TestCompareUnrelatedRuns(t *testing.T) {
	oldM := synthManifest("alpha", 6, []synthCell{{"hot", "16"}}, noisy(91, typicalMeans, 0.03, nil))
	newM := synthManifest("beta", 6, []synthCell{{"reactor", "et"}}, noisy(92, typicalMeans, 0.03, nil))
	newM.Cells[0].Config = map[string]string{"reactor": "et", "hot": "1"}
	c, err := results.Compare(oldM, newM, results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !c.NothingCompared() || len(c.Compared) != 0 || c.Regressions() != 0 {
		t.Fatalf("compared %q, %d regressions", c.Compared, c.Regressions())
	}
	out := tableOf(t, c)
	if got := lastLine(out); !strings.HasPrefix(got, "nothing compared: none of the 2 old and 2 new cells") || strings.Contains(out, "no significant regression") {
		t.Errorf("last line %q\n%s", got, out)
	}
	for _, want := range []string{"hot=16: only in the old runs", "reactor=et: only in the new runs", `baseline: configuration differs: budgets "budget-input=16" → absent`} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// TestCompareOneSidedMetricsAndEmptyCells: a metric only one side has
// values of is listed as not compared (the cell is still compared by the
// others); a cell with no valid old run compares nothing and is listed.
func TestCompareOneSidedMetricsAndEmptyCells(t *testing.T) {
	oldM := synthManifest("sided", 6, compareFactors, noisy(93, typicalMeans, 0.03, nil))
	newM := synthManifest("sided", 6, compareFactors, noisy(94, typicalMeans, 0.03, nil))
	for i := range newM.Runs {
		if newM.Runs[i].Cell == "hot=16" {
			delete(newM.Runs[i].Metrics, results.MetricControlP999)
		}
	}
	for i := range oldM.Runs {
		if oldM.Runs[i].Cell == "reactor=et" {
			oldM.Runs[i].Valid, oldM.Runs[i].Invalid = false, []string{"placement"}
		}
	}
	c, err := results.Compare(oldM, newM, results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Compared, ","); got != "baseline,hot=16" {
		t.Errorf("compared %q", got)
	}
	var sided, empty bool
	for _, nc := range c.NotCompared {
		switch {
		case nc.Cell == "hot=16" && nc.Metric == results.MetricControlP999 && nc.Why == results.OneSided:
			sided = nc.Reason == "control p99.9: values in 6 old runs, none in the new"
		case nc.Cell == "reactor=et" && nc.Metric == "" && nc.Why == results.NoValues:
			empty = nc.Reason == "no valid old run (6 valid new runs)"
		default:
			t.Errorf("unexpected %+v", nc)
		}
	}
	if !sided || !empty {
		t.Errorf("not compared: %+v", c.NotCompared)
	}
	if got := c.Summary(); got != "no significant regression beyond ±10%; not compared: 1 cell, 1 metric" {
		t.Errorf("summary %q", got)
	}
	for _, r := range c.Rows {
		if want := !(r.Cell == "reactor=et" || r.Cell == "hot=16" && r.Metric == results.MetricControlP999); r.Tested != want {
			t.Errorf("%s %s: tested %v", r.Cell, r.Metric, r.Tested)
		}
	}
}

// TestCompareNewMetricsAgainstAnOldBaseline: an old baseline written
// before the health check's and the urgent class's metrics existed lacks
// them; the new runs have them (huge false timeout counts, even). Asked for by name, each is
// listed as one-sided, never a regression; by default (the gate) they are
// not compared at all. Either way the comparison passes.
func TestCompareNewMetricsAgainstAnOldBaseline(t *testing.T) {
	oldM := synthManifest("health", 6, compareFactors, noisy(95, typicalMeans, 0.03, nil))
	newM := synthManifest("health", 6, compareFactors, noisy(96, typicalMeans, 0.03, nil))
	for i := range newM.Runs {
		newM.Runs[i].Metrics[results.MetricFalseTimeouts] = 1420
		newM.Runs[i].Metrics[results.MetricFalseRemovals] = 38
		newM.Runs[i].Metrics[results.MetricUrgentP999] = 5e5
		newM.Runs[i].Metrics[results.MetricUrgentSkips] = 900
		newM.Runs[i].Metrics[results.MetricUrgentWrong] = 3
	}
	fresh := []string{results.MetricFalseTimeouts, results.MetricFalseRemovals, results.MetricUrgentP999, results.MetricUrgentSkips, results.MetricUrgentWrong}
	named := append([]string{results.MetricThroughput}, fresh...)
	for _, metrics := range [][]string{nil, named} {
		c, err := results.Compare(oldM, newM, results.CompareOptions{Metrics: metrics})
		if err != nil {
			t.Fatal(err)
		}
		if c.Regressions() != 0 || len(c.Compared) != 3 {
			t.Errorf("metrics %v: %d regressions, compared %v", metrics, c.Regressions(), c.Compared)
		}
		sided := map[string]int{}
		for _, nc := range c.NotCompared {
			if nc.Why != results.OneSided {
				t.Errorf("metrics %v: unexpected %+v", metrics, nc)
				continue
			}
			sided[nc.Metric]++
			// 6 runs a factor cell, 12 the baseline (one per pair)
			if m, _ := results.MetricByName(nc.Metric); !strings.HasPrefix(nc.Reason, m.Label+": values in ") || !strings.HasSuffix(nc.Reason, " new runs, none in the old") {
				t.Errorf("reason %q", nc.Reason)
			}
		}
		want := 0
		if metrics != nil {
			want = 3 // one per cell
		}
		for _, name := range fresh {
			if sided[name] != want {
				t.Errorf("metrics %v: one-sided %v, want %d of each", metrics, sided, want)
				break
			}
		}
	}
}

// TestCompareGateCannotFire: with 2 repeats (a factor cell's 2 runs
// against 2, the baseline's 4 against 4) and 12 comparisons nothing can be
// significant: the table says so loudly, and even a halved throughput is
// inconclusive, not flagged.
func TestCompareGateCannotFire(t *testing.T) {
	oldM := synthManifest("few", 2, compareFactors, noisy(71, typicalMeans, 0.03, nil))
	newM := synthManifest("few", 2, compareFactors, noisy(72, typicalMeans, 0.03, everyCell(results.MetricThroughput, 0.5)))
	c, err := results.Compare(oldM, newM, results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	table := tableOf(t, c)
	if !strings.Contains(table, "WARNING: THE GATE CANNOT FIRE for every cell") {
		t.Errorf("no warning:\n%s", table)
	}
	if c.Regressions() != 0 {
		t.Errorf("%d regressions, want 0", c.Regressions())
	}
	for _, r := range c.Rows {
		if r.Verdict != results.VerdictInconclusive {
			t.Errorf("%s %s: %s, want inconclusive", r.Cell, r.Metric, r.Verdict)
		}
	}

	// With 3 repeats the baseline (6 against 6) can still fire; the factor
	// cells (3 against 3) cannot, and are named.
	oldM = synthManifest("few", 3, compareFactors, noisy(73, typicalMeans, 0.03, nil))
	newM = synthManifest("few", 3, compareFactors, noisy(74, typicalMeans, 0.03, everyCell(results.MetricThroughput, 0.5)))
	if c, err = results.Compare(oldM, newM, results.CompareOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(c.Notes) != 1 || !strings.HasPrefix(c.Notes[0], "WARNING: THE GATE CANNOT FIRE for cells hot=16, reactor=et:") || c.Regressions() != 1 {
		t.Errorf("3 repeats: %d regressions, notes %q", c.Regressions(), c.Notes)
	}
}

// TestCompareOptions: bad options are errors naming the option; Metrics
// chooses the rows.
func TestCompareOptions(t *testing.T) {
	m := synthManifest("opts", 3, compareFactors, noisy(81, typicalMeans, 0.03, nil))
	for _, opt := range []results.CompareOptions{{Threshold: -0.1}, {Alpha: 1.5}, {Metrics: []string{"thruput"}}} {
		if _, err := results.Compare(m, m, opt); err == nil {
			t.Errorf("%+v: no error", opt)
		}
	}
	if _, err := results.Compare(nil, m, results.CompareOptions{}); err == nil {
		t.Errorf("nil manifest: no error")
	}
	c, err := results.Compare(m, m, results.CompareOptions{Metrics: []string{results.MetricZeroWaits}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 3 || c.Rows[0].Metric != results.MetricZeroWaits || c.Rows[0].P != 1 || c.Regressions() != 0 {
		t.Errorf("rows: %+v", c.Rows)
	}
}
