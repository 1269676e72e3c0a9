package results_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/record"
)

// synthCell is one cell of a synthetic manifest: a factor ("" for the
// baseline) and its value.
type synthCell struct{ factor, value string }

// baselineConfig is the synthetic baseline's configuration.
var baselineConfig = map[string]string{"reactor": "lt", "hot": "4", "callback": "0", "budgets": "budget-input=16"}

// valuesFunc gives one run's metrics.
type valuesFunc func(cell string, repeat int, pair string) map[string]float64

// synthManifest builds a valid one-shard manifest laid out as the matrix
// runs it: for each repeat and each factor cell, a baseline run then the
// cell's run, both with Pair = the cell's ID (baseline runs only, Pair "",
// without factor cells). Every run is valid; gen gives its metrics.
func synthManifest(name string, repeats int, factors []synthCell, gen valuesFunc) *results.Manifest {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	m := &results.Manifest{
		Format: results.ManifestFormat,
		Tool:   results.Tool{Version: "v0.1.0", Commit: "0123456789abcdef", Go: "go1.26.8"},
		Spec:   results.SpecInfo{Name: name, Source: "embedded:" + name, Repeats: repeats},
		Cells:  []results.CellInfo{{ID: "baseline", Config: baselineConfig, Describe: "the baseline"}},
		Shards: []results.ShardInfo{{Index: 1, Count: 1, Machine: results.Machine{Hostname: "lab1", Kernel: "6.12.0 #1 SMP", CPUModel: "Test CPU @ 3.0GHz", CPUs: 8, OS: "linux", Arch: "amd64"},
			Placement: "server=0,loadgen=1", Mode: "lab", Started: t0, Finished: t0.Add(time.Hour)}},
	}
	for _, f := range factors {
		cfg := map[string]string{}
		for k, v := range baselineConfig {
			cfg[k] = v
		}
		cfg[f.factor] = f.value
		id := f.factor + "=" + f.value
		m.Cells = append(m.Cells, results.CellInfo{ID: id, Factor: f.factor, Value: f.value, Config: cfg, Describe: "the baseline with " + id})
		m.Shards[0].Cells = append(m.Shards[0].Cells, id)
	}
	add := func(cell string, repeat int, pair string) {
		seq := len(m.Runs) + 1
		m.Runs = append(m.Runs, results.RunRecord{
			Shard: 1, Seq: seq, Cell: cell, Repeat: repeat, Pair: pair,
			Dir: fmt.Sprintf("runs/%04d", seq), Started: t0.Add(time.Duration(seq) * time.Minute), ElapsedS: 12,
			Mode: "lab", Valid: true, Metrics: gen(cell, repeat, pair),
		})
	}
	for r := 1; r <= repeats; r++ {
		if len(factors) == 0 {
			add("baseline", r, "")
		}
		for _, c := range m.Cells[1:] {
			add("baseline", r, c.ID)
			add(c.ID, r, c.ID)
		}
	}
	if err := m.Check(); err != nil {
		panic(err)
	}
	return m
}

// noisy returns a valuesFunc drawing each metric of means from a seeded
// normal around its mean (relative noise sd), times scale[cell][metric]
// (1 when absent).
func noisy(seed uint64, means map[string]float64, noise float64, scale map[string]map[string]float64) valuesFunc {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func(cell string, _ int, _ string) map[string]float64 {
		out := map[string]float64{}
		for _, name := range sortedKeys(means) {
			f := 1.0
			if s, ok := scale[cell][name]; ok {
				f = s
			}
			out[name] = means[name] * f * (1 + noise*rng.NormFloat64())
		}
		return out
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks { // tiny insertion sort keeps the helper dependency-free
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}

var typicalMeans = map[string]float64{
	results.MetricThroughput:  250_000,
	results.MetricDataP99:     180,
	results.MetricControlP999: 900,
	results.MetricServerCPU:   3.2,
	results.MetricZeroWaits:   1200,
	results.MetricAnomalies:   0,
}

func metricOf(t *testing.T, a *results.Analysis, cell, metric string) results.MetricResult {
	t.Helper()
	for _, c := range a.Cells {
		if c.ID != cell {
			continue
		}
		for _, m := range c.Metrics {
			if m.Name == metric {
				return m
			}
		}
	}
	t.Fatalf("no metric %s in cell %s", metric, cell)
	return results.MetricResult{}
}

// TestAnalyzeVerdicts: a cell drawn like the baseline shows no significant
// difference; a clearly shifted cell is better or worse in the metric's
// direction (throughput up is better, latency and CPU up are worse), a
// Neutral metric is "different"; identical samples give p = 1.
func TestAnalyzeVerdicts(t *testing.T) {
	factors := []synthCell{{"reactor", "et"}, {"hot", "16"}}
	scale := map[string]map[string]float64{"hot=16": {
		results.MetricThroughput: 1.5, results.MetricDataP99: 1.5, results.MetricServerCPU: 0.6, results.MetricZeroWaits: 2,
	}}
	m := synthManifest("verdicts", 6, factors, noisy(1, typicalMeans, 0.03, scale))
	a := results.Analyze(m, nil)

	for _, name := range []string{results.MetricThroughput, results.MetricDataP99, results.MetricControlP999, results.MetricServerCPU, results.MetricZeroWaits} {
		if got := metricOf(t, a, "reactor=et", name); got.Verdict != results.VerdictSame {
			t.Errorf("reactor=et %s: %s (p %.3g, adj %.3g), want %q", name, got.Verdict, got.P, got.PAdjusted, results.VerdictSame)
		}
	}
	for name, want := range map[string]results.Verdict{
		results.MetricThroughput:  results.VerdictBetter,
		results.MetricDataP99:     results.VerdictWorse,
		results.MetricServerCPU:   results.VerdictBetter,
		results.MetricZeroWaits:   results.VerdictDifferent,
		results.MetricControlP999: results.VerdictSame,
	} {
		if got := metricOf(t, a, "hot=16", name); got.Verdict != want {
			t.Errorf("hot=16 %s: %s (p %.3g, adj %.3g), want %q", name, got.Verdict, got.P, got.PAdjusted, want)
		}
	}
	tp := metricOf(t, a, "hot=16", results.MetricThroughput)
	if tp.N != 6 || tp.BaselineN != 12 || tp.Pairs != 6 || math.Abs(tp.Ratio-1.5) > 0.1 || tp.RatioMin > tp.Ratio || tp.RatioMax < tp.Ratio {
		t.Errorf("hot=16 throughput: %+v", tp)
	}
	if an := metricOf(t, a, "hot=16", results.MetricAnomalies); an.P != 1 || an.Verdict != results.VerdictSame || an.Pairs != 0 {
		t.Errorf("all-zero anomalies: %+v, want p 1, no ratio (zero baseline), same", an)
	}
	if len(a.Notes) != 0 {
		t.Errorf("notes: %q", a.Notes)
	}
	if !strings.Contains(a.Method, "Mann–Whitney") || !strings.Contains(a.Method, "Holm") || !strings.Contains(a.Method, "pooled") || !strings.Contains(a.Method, "two-sided") {
		t.Errorf("method: %s", a.Method)
	}
}

// TestAnalyzeRatioIsPerPair: the ratio is the median of each cell run over
// the baseline run of its pair, so a drift shared by a pair cancels.
func TestAnalyzeRatioIsPerPair(t *testing.T) {
	gen := func(cell string, repeat int, _ string) map[string]float64 {
		v := 1000.0 * float64(repeat) // drift across repeats
		if cell != "baseline" {
			v *= 1.2
		}
		return map[string]float64{results.MetricThroughput: v}
	}
	a := results.Analyze(synthManifest("pairs", 4, []synthCell{{"hot", "16"}}, gen), nil)
	got := metricOf(t, a, "hot=16", results.MetricThroughput)
	if math.Abs(got.Ratio-1.2) > 1e-12 || math.Abs(got.RatioMin-1.2) > 1e-12 || math.Abs(got.RatioMax-1.2) > 1e-12 || got.Pairs != 4 {
		t.Errorf("ratio %v [%v, %v] over %d pairs, want 1.2 exactly over 4", got.Ratio, got.RatioMin, got.RatioMax, got.Pairs)
	}
}

// TestAnalyzeHolm: with three factor cells and 3 repeats (baseline 9 runs),
// cell "b" has raw p = 8/220 ≈ 0.036 < 0.05 but its Holm-adjusted p is
// 2·0.036 > 0.05: no significant difference; cell "a" (p = 2/220, adjusted
// 3·2/220 ≈ 0.027) stays significant.
func TestAnalyzeHolm(t *testing.T) {
	cellValues := map[string][]float64{"hot=a": {20, 21, 22}, "hot=b": {7.5, 10, 11}}
	baseNext := 0.0
	gen := func(cell string, repeat int, _ string) map[string]float64 {
		if cell == "baseline" {
			baseNext++
			return map[string]float64{results.MetricThroughput: baseNext} // 1..9
		}
		if vs, ok := cellValues[cell]; ok {
			return map[string]float64{results.MetricThroughput: vs[repeat-1]}
		}
		return map[string]float64{results.MetricThroughput: float64(repeat * 3)} // 3, 6, 9: in the middle
	}
	m := synthManifest("holm", 3, []synthCell{{"hot", "a"}, {"hot", "b"}, {"hot", "c"}}, gen)
	a := results.Analyze(m, nil)
	ca, cb := metricOf(t, a, "hot=a", results.MetricThroughput), metricOf(t, a, "hot=b", results.MetricThroughput)
	if math.Abs(ca.P-2.0/220) > 1e-12 || math.Abs(ca.PAdjusted-6.0/220) > 1e-12 || ca.Verdict != results.VerdictBetter {
		t.Errorf("cell a: %+v", ca)
	}
	if math.Abs(cb.P-8.0/220) > 1e-12 || math.Abs(cb.PAdjusted-16.0/220) > 1e-12 || cb.Verdict != results.VerdictSame {
		t.Errorf("cell b: %+v, want raw p 8/220 significant alone, adjusted 16/220 not", cb)
	}
}

// TestAnalyzeTooFewRepeats: 2 repeats of 3 cells cannot reach significance
// after Holm (stats.MinPValue(2, 6)·3 ≈ 0.21): even a tenfold shift is
// inconclusive, and a note says to raise repeats to 3.
func TestAnalyzeTooFewRepeats(t *testing.T) {
	scale := map[string]map[string]float64{"hot=16": {results.MetricThroughput: 10}}
	m := synthManifest("few", 2, []synthCell{{"hot", "16"}, {"hot", "1"}, {"reactor", "et"}}, noisy(2, typicalMeans, 0.01, scale))
	a := results.Analyze(m, nil)
	if got := metricOf(t, a, "hot=16", results.MetricThroughput); got.Verdict != results.VerdictInconclusive {
		t.Errorf("tenfold shift with 2 repeats: %s, want inconclusive", got.Verdict)
	}
	if !hasNote(a, "no verdict can be significant", "raise repeats to 3") {
		t.Errorf("notes: %q", a.Notes)
	}
	if got := results.RepeatsNeeded(3, 0.05); got != 3 {
		t.Errorf("RepeatsNeeded(3, 0.05) = %d, want 3", got)
	}
}

func hasNote(a *results.Analysis, parts ...string) bool {
	for _, n := range a.Notes {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(n, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestAnalyzeInvalidRunsExcluded: an invalid run's wild values do not enter
// the figures, and a note counts it with its first reason; so do NaN
// values, loopback runs and the load generator's limit flag.
func TestAnalyzeInvalidRunsExcluded(t *testing.T) {
	m := synthManifest("invalid", 4, []synthCell{{"hot", "16"}}, noisy(3, typicalMeans, 0.02, nil))
	for i := range m.Runs {
		r := &m.Runs[i]
		switch {
		case r.Cell == "hot=16" && r.Repeat == 2:
			r.Valid = false
			r.Invalid = []string{"anomalies: 3 frames lost", "late stop"}
			r.Metrics[results.MetricThroughput] = 1e12
		case r.Cell == "hot=16" && r.Repeat == 3:
			r.Metrics[results.MetricDataP99] = math.NaN()
			r.Metrics[results.MetricLoadgenLimited] = 1
			r.Metrics["not_in_catalogue"] = 7
		case r.Cell == "baseline" && r.Repeat == 4:
			r.Mode = results.ModeLoopback
		}
	}
	a := results.Analyze(m, nil)
	tp := metricOf(t, a, "hot=16", results.MetricThroughput)
	if tp.N != 3 || tp.Max > 1e6 || tp.Pairs != 3 {
		t.Errorf("throughput with an invalid run: %+v", tp)
	}
	if p99 := metricOf(t, a, "hot=16", results.MetricDataP99); p99.N != 2 {
		t.Errorf("data p99 with a NaN: N = %d, want 2", p99.N)
	}
	cell := a.Cells[1]
	if cell.Runs != 4 || cell.ValidRuns != 3 || len(cell.Invalid) != 1 || cell.Invalid[0] != "repeat 2: anomalies: 3 frames lost; late stop" {
		t.Errorf("cell: runs %d valid %d invalid %q", cell.Runs, cell.ValidRuns, cell.Invalid)
	}
	for _, want := range [][]string{
		{"hot=16", "1 of 4 runs invalid", "frames lost"},
		{"hot=16", "data_p99", "NaN"},
		{"1 of 8 runs", "loopback"},
		{"load generator", "hot=16 (1 run)"},
	} {
		if !hasNote(a, want...) {
			t.Errorf("no note with %q in %q", want, a.Notes)
		}
	}
	for _, c := range a.Cells {
		for _, mr := range c.Metrics {
			if mr.Name == "not_in_catalogue" || mr.Name == results.MetricLoadgenLimited {
				t.Errorf("cell %s reports %s", c.ID, mr.Name)
			}
		}
	}
	if _, err := json.Marshal(a); err != nil {
		t.Errorf("the analysis does not encode: %v", err)
	}
}

// A contended run stays valid but is left out of the analysis, named in
// its cell and in a note; a cell whose every valid run was contended is
// unmeasurable here. A run with a failed gate is analysed and listed.
func TestAnalyzeContendedRunsLeftOut(t *testing.T) {
	m := synthManifest("contended", 4, []synthCell{{"hot", "16"}, {"hot", "32"}}, noisy(3, typicalMeans, 0.02, nil))
	for i := range m.Runs {
		r := &m.Runs[i]
		switch {
		case r.Cell == "hot=16" && r.Repeat == 2:
			r.Contended = []string{"the server's CPU 0: others' processes 80% of it"}
			r.Metrics[results.MetricThroughput] = 1e12
		case r.Cell == "hot=16" && r.Repeat == 3:
			r.Flagged = []string{"independence (control): fail: lag-1 rank correlation 0.6"}
		case r.Cell == "hot=32":
			r.Contended = []string{"the loadgen's CPU 1: others' processes 75% of it"}
		}
	}
	a := results.Analyze(m, nil)
	if tp := metricOf(t, a, "hot=16", results.MetricThroughput); tp.N != 3 || tp.Max > 1e6 {
		t.Errorf("throughput with a contended run: %+v", tp)
	}
	cell := a.Cells[1]
	if cell.ValidRuns != 3 || len(cell.Contended) != 1 || !strings.Contains(cell.Contended[0], "repeat 2") || len(cell.Invalid) != 0 {
		t.Errorf("cell: valid %d contended %q invalid %q", cell.ValidRuns, cell.Contended, cell.Invalid)
	}
	if len(cell.Flagged) != 1 || !strings.HasPrefix(cell.Flagged[0], "repeat 3: independence") {
		t.Errorf("cell: flagged %q, want repeat 3's gate (analysed, listed)", cell.Flagged)
	}
	n := m.AllRuns()
	if n != (results.RunCounts{Total: 16, Valid: 16, Contended: 5}) || n.Text() != "16/16 runs valid, 5 of them contended (left out)" {
		t.Errorf("run counts %+v: %q", n, n.Text())
	}
	for _, want := range [][]string{{"CONTENDED cell hot=16", "1 of 4 runs"}, {"cell hot=32", "unmeasurable here"}, {"cell hot=16", "1 failed gate of"}} {
		if !hasNote(a, want...) {
			t.Errorf("no note with %q in %q", want, a.Notes)
		}
	}
}

// TestAnalyzeIndependentOfOrderAndShards: permuting the runs and spreading
// them over other shards with other sequence numbers and directories gives
// the identical Analysis.
func TestAnalyzeIndependentOfOrderAndShards(t *testing.T) {
	m := synthManifest("order", 5, []synthCell{{"hot", "16"}, {"reactor", "et"}, {"budgets", "budget-input=8"}}, noisy(4, typicalMeans, 0.05, nil))
	m.Runs[3].Valid, m.Runs[3].Invalid = false, []string{"target exited"}
	m.Runs[8].Valid, m.Runs[8].Invalid = false, []string{"hot source stalled"}
	want := results.Analyze(m, nil)

	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 5; trial++ {
		p := *m
		p.Runs = append([]results.RunRecord(nil), m.Runs...)
		rng.Shuffle(len(p.Runs), func(i, j int) { p.Runs[i], p.Runs[j] = p.Runs[j], p.Runs[i] })
		p.Shards = []results.ShardInfo{m.Shards[0], m.Shards[0], m.Shards[0]}
		for i := range p.Shards {
			p.Shards[i].Index, p.Shards[i].Count = i+1, 3
		}
		for i := range p.Runs {
			p.Runs[i].Shard = 1 + rng.IntN(3)
			p.Runs[i].Seq = 1000 - i
			p.Runs[i].Dir = fmt.Sprintf("runs/x%03d", i)
		}
		if err := p.Check(); err != nil {
			t.Fatal(err)
		}
		if got := results.Analyze(&p, nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("trial %d: the analysis changed with the runs' order and shards", trial)
		}
	}
}

// TestAnalyzeNoFactors: a spec with only a baseline gives its figures and
// no comparison; its one note is that with 3 runs a compare of it could
// not fire.
func TestAnalyzeNoFactors(t *testing.T) {
	a := results.Analyze(synthManifest("alone", 3, nil, noisy(7, typicalMeans, 0.02, nil)), nil)
	if len(a.Cells) != 1 || a.Cells[0].ValidRuns != 3 || len(a.Notes) != 1 || !strings.Contains(a.Notes[0], "THE GATE CANNOT FIRE for every cell") {
		t.Fatalf("analysis: %+v", a)
	}
	if tp := metricOf(t, a, "baseline", results.MetricThroughput); tp.N != 3 || tp.Verdict != "" || tp.BaselineN != 0 {
		t.Errorf("baseline throughput: %+v", tp)
	}
}

// TestAnalyzeLatency: Latency summarises each class of the cell's merged
// histograms.
func TestAnalyzeLatency(t *testing.T) {
	m := synthManifest("latency", 3, []synthCell{{"hot", "16"}}, noisy(8, typicalMeans, 0.02, nil))
	h := record.NewHistogram()
	for i := int64(1); i <= 1000; i++ {
		if err := h.RecordValue(i * 1000); err != nil {
			t.Fatal(err)
		}
	}
	a := results.Analyze(m, map[string]map[string]*hdrhistogram.Histogram{"hot=16": {"data": h}})
	if got := a.Cells[1].Latency["data"]; got.Count != 1000 || math.Abs(got.P50Us-500) > 1 {
		t.Errorf("hot=16 data latency: %+v", got)
	}
	if a.Cells[0].Latency != nil {
		t.Errorf("baseline latency without histograms: %+v", a.Cells[0].Latency)
	}
}

// TestAnalyzeInvalidBaselineRunExcluded: an invalid baseline run, even with
// an absurd throughput, is neither in the pooled baseline sample nor the
// baseline of its pair: BaselineN and the cell's Pairs drop by one, the
// ratios stay sane and the baseline median is that of the valid runs.
func TestAnalyzeInvalidBaselineRunExcluded(t *testing.T) {
	m := synthManifest("invalid-baseline", 4, []synthCell{{"hot", "16"}}, noisy(41, typicalMeans, 0.02, nil))
	before := metricOf(t, results.Analyze(m, nil), "hot=16", results.MetricThroughput)
	var valid []float64
	for i := range m.Runs {
		r := &m.Runs[i]
		switch {
		case r.Cell == "baseline" && r.Repeat == 2:
			r.Valid, r.Invalid = false, []string{"target exited"}
			r.Metrics[results.MetricThroughput] = 1e12
		case r.Cell == "baseline":
			valid = append(valid, r.Metrics[results.MetricThroughput])
		}
	}
	a := results.Analyze(m, nil)
	tp := metricOf(t, a, "hot=16", results.MetricThroughput)
	if before.BaselineN != 4 || before.Pairs != 4 {
		t.Fatalf("all valid: baseline n %d, pairs %d, want 4, 4", before.BaselineN, before.Pairs)
	}
	if tp.BaselineN != 3 || tp.Pairs != 3 {
		t.Errorf("one invalid baseline run: baseline n %d, pairs %d, want 3, 3", tp.BaselineN, tp.Pairs)
	}
	if tp.RatioMax >= 2 || tp.RatioMin <= 0.5 || tp.Ratio <= 0.5 || tp.Ratio >= 2 {
		t.Errorf("ratio %v [%v, %v]: the invalid baseline run made a pair", tp.Ratio, tp.RatioMin, tp.RatioMax)
	}
	slices.Sort(valid)
	if len(valid) != 3 || tp.BaselineMedian != valid[1] {
		t.Errorf("baseline median %v, want %v, the median of the valid baseline runs %v", tp.BaselineMedian, valid[1], valid)
	}
	if b := metricOf(t, a, "baseline", results.MetricThroughput); b.N != 3 || b.Max > 1e6 {
		t.Errorf("baseline cell throughput: %+v", b)
	}
}

// TestAnalyzePairsNeedOneMatchingBaseline: a cell's run makes a ratio only
// with the single baseline run of its own pair and repeat: a second
// baseline run for the same pair and repeat makes that repeat ambiguous
// (no ratio), and so does a cell run whose Pair names another cell. Other
// repeats and cells keep their ratios.
func TestAnalyzePairsNeedOneMatchingBaseline(t *testing.T) {
	gen := func(cell string, repeat int, _ string) map[string]float64 {
		v := 1000.0 * float64(repeat)
		if cell != "baseline" {
			v *= 1.2
		}
		return map[string]float64{results.MetricThroughput: v}
	}
	factors := []synthCell{{"hot", "16"}, {"reactor", "et"}}

	t.Run("duplicate baseline", func(t *testing.T) {
		m := synthManifest("dup", 3, factors, gen)
		seq := len(m.Runs) + 1
		dup := m.Runs[0] // the baseline run of hot=16, repeat 1
		if dup.Cell != "baseline" || dup.Pair != "hot=16" || dup.Repeat != 1 {
			t.Fatalf("unexpected first run %+v", dup)
		}
		dup.Seq, dup.Dir = seq, fmt.Sprintf("runs/%04d", seq)
		dup.Metrics = map[string]float64{results.MetricThroughput: 100}
		m.Runs = append(m.Runs, dup)
		if err := m.Check(); err != nil {
			t.Fatal(err)
		}
		a := results.Analyze(m, nil)
		if got := metricOf(t, a, "hot=16", results.MetricThroughput); got.Pairs != 2 || math.Abs(got.Ratio-1.2) > 1e-12 || math.Abs(got.RatioMin-1.2) > 1e-12 || math.Abs(got.RatioMax-1.2) > 1e-12 {
			t.Errorf("hot=16 with two baseline runs in repeat 1: ratio %v [%v, %v] over %d pairs, want 1.2 over 2", got.Ratio, got.RatioMin, got.RatioMax, got.Pairs)
		}
		if got := metricOf(t, a, "reactor=et", results.MetricThroughput); got.Pairs != 3 || got.BaselineN != 7 {
			t.Errorf("reactor=et: %d pairs, baseline n %d, want 3, 7", got.Pairs, got.BaselineN)
		}
	})

	t.Run("pair of another cell", func(t *testing.T) {
		m := synthManifest("mismatch", 3, factors, gen)
		found := false
		for i := range m.Runs {
			if r := &m.Runs[i]; r.Cell == "hot=16" && r.Repeat == 2 {
				r.Pair, found = "reactor=et", true
			}
		}
		if !found {
			t.Fatal("no hot=16 repeat 2 run")
		}
		if err := m.Check(); err != nil {
			t.Fatal(err)
		}
		a := results.Analyze(m, nil)
		if got := metricOf(t, a, "hot=16", results.MetricThroughput); got.Pairs != 2 || got.N != 3 {
			t.Errorf("hot=16 with a run paired to reactor=et: %d pairs of %d runs, want 2 of 3", got.Pairs, got.N)
		}
		if got := metricOf(t, a, "reactor=et", results.MetricThroughput); got.Pairs != 3 {
			t.Errorf("reactor=et: %d pairs, want 3", got.Pairs)
		}
	})
}

// TestAnalyzeNotesAreDeterministic: a run with several non-finite metrics
// gives its notes in one order (the metrics' names sorted), every time.
func TestAnalyzeNotesAreDeterministic(t *testing.T) {
	m := synthManifest("nan", 4, []synthCell{{"hot", "16"}}, noisy(3, typicalMeans, 0.02, nil))
	for i := range m.Runs {
		if r := &m.Runs[i]; r.Cell == "hot=16" && r.Repeat == 3 {
			r.Metrics[results.MetricDataP99] = math.NaN()
			r.Metrics[results.MetricThroughput] = math.Inf(1)
			r.Metrics[results.MetricDataP50] = math.NaN()
		}
	}
	first := strings.Join(results.Analyze(m, nil).Notes, "\n")
	if strings.Count(first, "skipped") < 3 {
		t.Fatalf("want three skipped-metric notes, got:\n%s", first)
	}
	for range 20 {
		if again := strings.Join(results.Analyze(m, nil).Notes, "\n"); again != first {
			t.Fatalf("notes changed between two analyses of one manifest:\n%s\n---\n%s", first, again)
		}
	}
}
