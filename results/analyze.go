package results

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/reactorlab/reactorlab/results/figure"
	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/results/stats"
)

// DefaultAlpha is the family-wise significance level of Analyze and the
// default of Compare.
const DefaultAlpha = 0.05

// MetricLoadgenLimited is a run's flag, not a catalogue metric: 1 when the
// load generator, not the server, was the limit of the run's throughput.
// Analyze reports the cells that have such runs in its notes.
const MetricLoadgenLimited = "loadgen_limited"

// MetricServerLimited and MetricNeitherLimited are a run's flags beside
// MetricLoadgenLimited, not catalogue metrics: 1 when the server was the
// limit (its CPUs full), or neither side (both had CPU to spare). A run
// has at most one of the three; a run with none (recorded before them,
// or without the figures) says nothing. Analyze counts them per cell
// (CellAnalysis.Limits).
const (
	MetricServerLimited  = "server_limited"
	MetricNeitherLimited = "neither_limited"
)

// limitFlags maps each limit flag to the side CellAnalysis.Limits names.
var limitFlags = []struct{ metric, side string }{
	{MetricLoadgenLimited, "loadgen"}, {MetricServerLimited, "server"}, {MetricNeitherLimited, "neither"},
}

// ModeLoopback is RunRecord.Mode for a run over loopback, without the lab's
// network namespaces.
const ModeLoopback = "loopback"

// AnalyzeDir reads the run directory dir's manifest and the measured
// histograms of its valid runs, and analyses them.
func AnalyzeDir(dir string) (*Manifest, *Analysis, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, nil, err
	}
	hists, err := CellHistograms(dir, m)
	if err != nil {
		return m, nil, fmt.Errorf("analyse %s: %w", dir, err)
	}
	return m, Analyze(m, hists), nil
}

// Analyze compares every factor cell of m with the baseline, metric by
// metric, using only valid runs (see Analysis.Method for the statistics).
// hists are the cells' merged measured histograms as CellHistograms returns
// them; nil leaves every Latency empty. The result depends only on the set
// of runs, not on their order, shards or sequence numbers, and is
// deterministic. Values that are not finite are skipped and noted; metric
// keys the catalogue does not know are ignored (MetricLoadgenLimited is
// read for the notes).
func Analyze(m *Manifest, hists map[string]map[string]*hdrhistogram.Histogram) *Analysis {
	if m == nil {
		m = &Manifest{}
	}
	a := &Analysis{Spec: m.Spec.Name, Repeats: m.Spec.Repeats, Alpha: DefaultAlpha}
	if len(m.Cells) == 0 {
		a.Method = methodText(a.Alpha, 0, 0)
		a.Notes = append(a.Notes, "the manifest has no cells")
		return a
	}
	runs := canonicalRuns(m.Runs)
	var notes notes
	base := pooledBaseline(runs, m.Cells[0].ID, &notes)
	var tests rankTests
	for ci, c := range m.Cells {
		a.Cells = append(a.Cells, analyzeCell(ci, c, runs, base, hists[c.ID], &tests, &notes))
	}
	compareIntervals(a.Cells)
	exact, normal := tests.judge(a)
	a.Method = methodText(a.Alpha, exact, normal)
	addCellNotes(a.Cells, &notes)
	addPowerNote(m.Spec.Repeats, len(m.Cells)-1, a.Alpha, &notes)
	addRunNotes(m.Cells, runs, &notes)
	addGateNote(m, &notes)
	a.Notes = notes.list
	return a
}

// baselineRuns are the baseline's valid runs: the pooled sample of each
// metric, and the baseline run of each pair (dup marks a pair with more
// than one, which then has no ratio).
type baselineRuns struct {
	vals map[string][]float64
	pair map[pairKey]*RunRecord
	dup  map[pairKey]bool
}

// pooledBaseline collects the valid runs of cell baseID from runs.
func pooledBaseline(runs []RunRecord, baseID string, ns *notes) baselineRuns {
	base := baselineRuns{vals: map[string][]float64{}, pair: map[pairKey]*RunRecord{}, dup: map[pairKey]bool{}}
	for i := range runs {
		r := &runs[i]
		if r.Cell != baseID || !r.Comparable() {
			continue
		}
		for name, v := range catalogueValues(r, baseID, ns) {
			base.vals[name] = append(base.vals[name], v)
		}
		k := pairKey{r.Pair, r.Repeat}
		if base.pair[k] != nil {
			base.dup[k] = true
		}
		base.pair[k] = r
	}
	return base
}

// testAt is the place of one rank test: a.Cells[cell].Metrics[metric].
type testAt struct{ cell, metric int }

// rankTests are the rank tests of the factor cells against the pooled
// baseline, grouped in one Holm family per metric name.
type rankTests struct {
	families map[string][]testAt
	tests    map[testAt]stats.RankTest
}

// add queues test t of metric at k, in metric's family.
func (rt *rankTests) add(metric string, k testAt, t stats.RankTest) {
	if rt.families == nil {
		rt.families = map[string][]testAt{}
		rt.tests = map[testAt]stats.RankTest{}
	}
	rt.tests[k] = t
	rt.families[metric] = append(rt.families[metric], k)
}

// judge applies Holm over the factor cells, one family per metric, and
// sets each tested metric's p-values and verdict in a. It returns how
// many tests were exact and how many used the normal approximation.
func (rt *rankTests) judge(a *Analysis) (exact, normal int) {
	for _, metric := range Metrics {
		fam := rt.families[metric.Name]
		ps := make([]float64, len(fam))
		for i, k := range fam {
			ps[i] = rt.tests[k].P
		}
		adj := stats.HolmAdjust(ps)
		for i, k := range fam {
			t := rt.tests[k]
			if t.Exact {
				exact++
			} else {
				normal++
			}
			mr := &a.Cells[k.cell].Metrics[k.metric]
			mr.P, mr.PAdjusted = t.P, adj[i]
			mr.Verdict = verdict(metric.Better, t, adj[i], len(fam), a.Alpha)
		}
	}
	return exact, normal
}

// analyzeCell summarises cell c, the ci-th of the manifest: its runs, its
// metrics (for a factor cell with the ratios to the baseline and a rank
// test against it, queued in tests) and the latency summaries of hs.
func analyzeCell(ci int, c CellInfo, runs []RunRecord, base baselineRuns, hs map[string]*hdrhistogram.Histogram, tests *rankTests, ns *notes) CellAnalysis {
	ca := CellAnalysis{ID: c.ID, Factor: c.Factor, Value: c.Value, Describe: c.Describe}
	vals, ratios := cellSamples(&ca, c, runs, base, ns)
	for _, metric := range Metrics {
		v := vals[metric.Name]
		if len(v) == 0 {
			continue
		}
		mr := MetricResult{Name: metric.Name, N: len(v), Median: median(v), Min: slices.Min(v), Max: slices.Max(v)}
		if !c.Baseline() {
			bv := base.vals[metric.Name]
			mr.BaselineN = len(bv)
			if len(bv) > 0 {
				mr.BaselineMedian = median(bv)
			}
			if rs := ratios[metric.Name]; len(rs) > 0 {
				mr.Ratio, mr.RatioMin, mr.RatioMax, mr.Pairs = median(rs), slices.Min(rs), slices.Max(rs), len(rs)
			}
			mr.Verdict = VerdictInconclusive
			if len(bv) > 0 {
				tests.add(metric.Name, testAt{ci, len(ca.Metrics)}, stats.MannWhitney(v, bv))
			}
		}
		ca.Metrics = append(ca.Metrics, mr)
	}
	if len(hs) > 0 {
		ca.Latency = map[string]record.ClassSummary{}
		for class, h := range hs {
			if h != nil {
				s := record.Summarize(h, 0)
				s.Widen(h, cellThinning(runs, c.ID, class))
				ca.Latency[class] = s
			}
		}
	}
	return ca
}

// cellSamples counts cell c's runs and invalid runs into ca, and returns
// the valid runs' values of each metric and, for a factor cell, the ratios
// of each run to the baseline run of its pair (nil for the baseline).
func cellSamples(ca *CellAnalysis, c CellInfo, runs []RunRecord, base baselineRuns, ns *notes) (vals, ratios map[string][]float64) {
	vals = map[string][]float64{}
	if !c.Baseline() {
		ratios = map[string][]float64{}
	}
	for i := range runs {
		r := &runs[i]
		if r.Cell != c.ID {
			continue
		}
		ca.Runs++
		if !r.Valid {
			ca.Invalid = append(ca.Invalid, invalidText(r, c.Baseline()))
			continue
		}
		if !r.Comparable() {
			ca.Contended = append(ca.Contended, runText(r, c.Baseline(), strings.Join(r.Contended, "; ")))
			continue
		}
		ca.ValidRuns++
		for _, g := range r.Flagged {
			ca.Flagged = append(ca.Flagged, runText(r, c.Baseline(), g))
		}
		for _, f := range limitFlags {
			if r.Metrics[f.metric] == 1 {
				if ca.Limits == nil {
					ca.Limits = map[string]int{}
				}
				ca.Limits[f.side]++
			}
		}
		cur := catalogueValues(r, c.ID, ns)
		for name, v := range cur {
			vals[name] = append(vals[name], v)
		}
		if c.Baseline() {
			continue
		}
		k := pairKey{c.ID, r.Repeat}
		b := base.pair[k]
		if r.Pair != c.ID || b == nil || base.dup[k] {
			continue
		}
		bv := catalogueValues(b, "", nil)
		for name, v := range cur {
			if w, ok := bv[name]; ok && w != 0 && !math.IsInf(v/w, 0) {
				ratios[name] = append(ratios[name], v/w)
			}
		}
	}
	return vals, ratios
}

// addCellNotes notes each cell's invalid runs, and a cell without a valid
// run.
func addCellNotes(cells []CellAnalysis, ns *notes) {
	for _, ca := range cells {
		if len(ca.Invalid) > 0 {
			ns.add(fmt.Sprintf("cell %s: %d of %d runs invalid, excluded (first: %s)", ca.ID, len(ca.Invalid), ca.Runs, ca.Invalid[0]))
		}
		if len(ca.Contended) > 0 {
			ns.add(fmt.Sprintf("CONTENDED cell %s: %d of %d runs had CPUs other processes took while its threads waited, left out (first: %s)", ca.ID, len(ca.Contended), ca.Runs, ca.Contended[0]))
		}
		if len(ca.Flagged) > 0 {
			ns.add(fmt.Sprintf("cell %s: %s of the load generator's self-check in its analysed runs: their figures mean less (first: %s)", ca.ID, figure.Counted(len(ca.Flagged), "failed gate", "failed gates"), ca.Flagged[0]))
		}
		switch {
		case ca.Runs > 0 && ca.ValidRuns == 0 && len(ca.Contended) > 0:
			ns.add(fmt.Sprintf("cell %s: unmeasurable here: every valid run was contended (rerun it on a machine, or CPUs, nobody else uses)", ca.ID))
		case ca.Runs > 0 && ca.ValidRuns == 0:
			ns.add(fmt.Sprintf("cell %s: no valid run: nothing to report", ca.ID))
		}
	}
}

// addPowerNote notes when repeats are too few for any verdict over
// factorCells factor cells to be significant at alpha.
func addPowerNote(repeats, factorCells int, alpha float64, ns *notes) {
	if factorCells > 0 {
		if p := stats.MinPValue(repeats, repeats*factorCells) * float64(factorCells); p > alpha {
			ns.add(fmt.Sprintf("with %s and %s the smallest adjusted p is %.3g: no verdict can be significant at alpha %g; raise repeats to %d",
				figure.Counted(repeats, "repeat", "repeats"), figure.Counted(factorCells, "cell", "cells"), p, alpha, RepeatsNeeded(factorCells, alpha)))
		}
	}
}

// addGateNote warns where the gate of `reactorlab compare` could not
// fire in a comparison of this run with another like it: its warning
// (gateCannotFire, the one compare prints) over the default gate metrics,
// each cell with the valid runs it has of each (cellValues, as compare
// counts them) on both sides, at DefaultAlpha.
func addGateNote(m *Manifest, ns *notes) {
	var rows []gateRow
	for _, c := range m.Cells {
		vals, _, _ := cellValues(m, c.ID)
		for _, mt := range Metrics {
			if n := len(vals[mt.Name]); mt.Gate && n > 0 {
				rows = append(rows, gateRow{Cell: c.ID, OldN: n, NewN: n})
			}
		}
	}
	if _, note := gateCannotFire(rows, DefaultAlpha); note != "" {
		ns.add("compared with another run like this one (reactorlab compare, its default metrics): " + note)
	}
}

// addRunNotes notes the runs over loopback and the cells whose runs were
// limited by the load generator.
func addRunNotes(cells []CellInfo, runs []RunRecord, ns *notes) {
	loopback := 0
	limited := map[string]int{}
	for _, r := range runs {
		if r.Mode == ModeLoopback {
			loopback++
		}
		if r.Metrics[MetricLoadgenLimited] == 1 {
			limited[r.Cell]++
		}
	}
	if loopback > 0 {
		ns.add(fmt.Sprintf("%d of %d runs ran in loopback mode, without the lab's network namespaces: client and server share one network stack, so latencies and CPU are not the lab's", loopback, len(runs)))
	}
	if len(limited) > 0 {
		var parts []string
		for _, c := range cells {
			if n := limited[c.ID]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s (%s)", c.ID, figure.Counted(n, "run", "runs")))
			}
		}
		ns.add("the load generator was the limit, not the server, in runs of " + strings.Join(parts, ", ") + ": their throughput measures the load generator")
	}
}

// RepeatsNeeded is the smallest number of repeats with which a spec of
// factorCells factor cells (and so factorCells·repeats pooled baseline
// runs) can reach significance at alpha after Holm's correction over the
// cells, if every run is valid: stats.MinPValue(r, r·factorCells)·factorCells ≤
// alpha. It returns 0 if no number up to 1000 does.
func RepeatsNeeded(factorCells int, alpha float64) int {
	for r := 1; r <= 1000; r++ {
		if stats.MinPValue(r, r*factorCells)*float64(max(factorCells, 1)) <= alpha {
			return r
		}
	}
	return 0
}

// verdict judges one comparison: significant after the correction wins,
// in the direction of the rank statistic; else inconclusive when no data of
// these sizes could have been significant in a family of familySize.
func verdict(better Better, t stats.RankTest, pAdjusted float64, familySize int, alpha float64) Verdict {
	if t.NX == 0 || t.NY == 0 {
		return VerdictInconclusive
	}
	if pAdjusted < alpha {
		higher := t.U > float64(t.NX*t.NY)/2
		switch {
		case better == Neutral:
			return VerdictDifferent
		case higher == (better == HigherIsBetter):
			return VerdictBetter
		default:
			return VerdictWorse
		}
	}
	if stats.MinPValue(t.NX, t.NY)*float64(familySize) > alpha {
		return VerdictInconclusive
	}
	return VerdictSame
}

func methodText(alpha float64, exact, normal int) string {
	how := "exact p-values from the permutation distribution of the rank sum"
	switch {
	case exact == 0 && normal > 0:
		how = "p-values from the normal approximation with tie and continuity correction"
	case exact > 0 && normal > 0:
		how = fmt.Sprintf("exact p-values from the permutation distribution of the rank sum (%s) or, for large samples, the normal approximation with tie and continuity correction (%s)", figure.Counted(exact, "test", "tests"), figure.Counted(normal, "test", "tests"))
	}
	return fmt.Sprintf("Each factor cell's valid runs are compared with all valid baseline runs, pooled "+
		"(the baseline runs are interleaved with every cell's, so they sample the machine's drift over the whole run, "+
		"and the result does not depend on sharding), by the two-sided Mann–Whitney U (Wilcoxon rank-sum) test "+
		"with mid-ranks for ties: %s. "+
		"The p-values are adjusted by Holm–Bonferroni over the factor cells, separately for each metric, "+
		"and a difference is significant when the adjusted p < %g. "+
		"A verdict is inconclusive when even the most extreme data of these sample sizes could not be significant. "+
		"Ratios are the median, over the pairs, of a cell's run divided by the baseline run of the same pair and repeat, "+
		"with their range in brackets.", how, alpha)
}

// pairKey identifies a pair of runs: the factor cell and the repeat.
type pairKey struct {
	pair   string
	repeat int
}

// canonicalRuns returns runs sorted by content (cell, repeat, pair, mode,
// validity, reasons, metrics), ignoring shard, sequence, directory and
// times, so that everything computed from them is independent of order
// and sharding.
func canonicalRuns(runs []RunRecord) []RunRecord {
	out := slices.Clone(runs)
	slices.SortStableFunc(out, func(a, b RunRecord) int {
		return cmp.Or(
			strings.Compare(a.Cell, b.Cell),
			cmp.Compare(a.Repeat, b.Repeat),
			strings.Compare(a.Pair, b.Pair),
			strings.Compare(a.Mode, b.Mode),
			cmpBool(a.Valid, b.Valid),
			slices.Compare(a.Invalid, b.Invalid),
			strings.Compare(metricsKey(a.Metrics), metricsKey(b.Metrics)),
		)
	})
	return out
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func metricsKey(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%v;", k, m[k])
	}
	return b.String()
}

// catalogueValues returns the run's values of catalogue metrics, skipping
// non-finite ones (with a note, if ns is not nil, naming cell).
func catalogueValues(r *RunRecord, cell string, ns *notes) map[string]float64 {
	out := make(map[string]float64, len(r.Metrics))
	for _, name := range slices.Sorted(maps.Keys(r.Metrics)) { // sorted: the notes come out in one order
		v := r.Metrics[name]
		if _, ok := MetricByName(name); !ok {
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if ns != nil {
				ns.add(fmt.Sprintf("cell %s: metric %s is %v in a run (repeat %d); skipped", cell, name, v, r.Repeat))
			}
			continue
		}
		out[name] = v
	}
	return out
}

// invalidText is one invalid run's line of CellAnalysis.Invalid.
func invalidText(r *RunRecord, baseline bool) string {
	why := strings.Join(r.Invalid, "; ")
	if why == "" {
		why = "no reason recorded"
	}
	return runText(r, baseline, why)
}

// runText is a line about one run: "repeat 2 (before hot=1): why".
func runText(r *RunRecord, baseline bool, why string) string {
	if baseline && r.Pair != "" {
		return fmt.Sprintf("repeat %d (before %s): %s", r.Repeat, r.Pair, why)
	}
	return fmt.Sprintf("repeat %d: %s", r.Repeat, why)
}

// notes collects distinct notes in the order first added.
type notes struct {
	list []string
	seen map[string]bool
}

func (n *notes) add(s string) {
	if n.seen == nil {
		n.seen = map[string]bool{}
	}
	if !n.seen[s] {
		n.seen[s] = true
		n.list = append(n.list, s)
	}
}

// median of a non-empty sample (the mean of the middle two for an even
// size). It does not change v.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
