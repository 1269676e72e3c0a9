package htmlreport

import (
	"bytes"
	"fmt"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/results"
)

// driftingRun is a baseline and one factor cell, 3 repeats, whose cell
// median throughput (520) is above the baseline's (500) while the median
// of its per-repeat ratios (×0.950) is below 1.
func driftingRun(t *testing.T) (*results.Manifest, *results.Analysis) {
	t.Helper()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := &results.Manifest{
		Format: results.ManifestFormat,
		Tool:   results.Tool{Version: "(devel)", Commit: "0123456789abcdef", Go: "go1.26.8"},
		Spec:   results.SpecInfo{Name: "drift", Source: "embedded:drift", Text: "name: drift\n", Repeats: 3},
		Cells: []results.CellInfo{{ID: "baseline", Config: map[string]string{"hot": "1"}},
			{ID: "hot=16", Factor: "hot", Value: "16", Config: map[string]string{"hot": "16"}}},
		Shards: []results.ShardInfo{{Index: 1, Count: 1, Placement: "server=0,loadgen=1", Mode: "lab", Started: start, Finished: start.Add(time.Minute)}},
	}
	base, ratio := []float64{100, 600, 500}, []float64{0.95, 550.0 / 600, 1.04}
	for rep := 1; rep <= 3; rep++ {
		for _, cell := range []string{"baseline", "hot=16"} {
			v := base[rep-1]
			if cell != "baseline" {
				v *= ratio[rep-1]
			}
			seq := len(m.Runs) + 1
			m.Runs = append(m.Runs, results.RunRecord{Shard: 1, Seq: seq, Cell: cell, Repeat: rep, Pair: "hot=16",
				Dir: fmt.Sprintf("runs/%03d", seq), Started: start, Mode: "lab", Valid: true,
				Metrics: map[string]float64{results.MetricThroughput: v}})
		}
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	a := results.Analyze(m, nil)
	for _, c := range a.Cells {
		if r, _ := metricOf(c, results.MetricThroughput); c.Factor != "" && !(r.Median > r.BaselineMedian && r.Ratio < 1) {
			t.Fatalf("the fixture's cell has median %v, baseline %v, ratio %v: not two ways", r.Median, r.BaselineMedian, r.Ratio)
		}
	}
	return m, a
}

// TestBarPlotCaptionSaysWhatItDraws: the throughput plot's caption says it
// draws each cell's ratio to the baseline as the summary table gives it,
// the median of the per-repeat ratios, not the cells' medians.
func TestBarPlotCaptionSaysWhatItDraws(t *testing.T) {
	m, a := driftingRun(t)
	var b bytes.Buffer
	if err := Write(&b, m, a, nil); err != nil {
		t.Fatal(err)
	}
	doc := html.UnescapeString(b.String())
	i := strings.Index(doc, `data-plot="`+PlotThroughput+`"`)
	if i < 0 {
		t.Fatal("no throughput plot")
	}
	fig := doc[i:]
	fig = fig[:strings.Index(fig, "</figure>")]
	for _, want := range []string{"ratio to the baseline", "the median of the per-repeat ratios", "not the ratio of the medians", "the baseline, ×1"} {
		if !strings.Contains(fig, want) {
			t.Errorf("the throughput plot's caption does not say %q: %s", want, fig[strings.Index(fig, "<figcaption>"):])
		}
	}
}

// TestBarsDrawTheTablesRatio: the bars of a spec with factor cells are the
// summary table's figures in its direction: the factor cell at its ratio
// (×0.950, shorter than the baseline's bar at 1, though its median is
// above the baseline's), whiskers its pairs' range; without factor cells,
// the baseline's median.
func TestBarsDrawTheTablesRatio(t *testing.T) {
	_, a := driftingRun(t)
	mt, _ := results.MetricByName(results.MetricThroughput)
	bars, relative, missing := barsOf(a, mt)
	cell, _ := metricOf(a.Cells[1], mt.Name)
	if !relative || len(missing) != 0 || len(bars) != 2 {
		t.Fatalf("bars %+v, relative %v, missing %q", bars, relative, missing)
	}
	if b := bars[0]; !b.Baseline || b.Median != 1 {
		t.Errorf("baseline bar %+v, want at 1", b)
	}
	if b := bars[1]; b.Median != cell.Ratio || b.Min != cell.RatioMin || b.Max != cell.RatioMax || !(b.Median < bars[0].Median) {
		t.Errorf("cell bar %+v, want its ratio %v [%v, %v], shorter than the baseline's", b, cell.Ratio, cell.RatioMin, cell.RatioMax)
	}

	alone := &results.Analysis{Cells: a.Cells[:1]}
	bars, relative, _ = barsOf(alone, mt)
	base, _ := metricOf(a.Cells[0], mt.Name)
	if relative || len(bars) != 1 || bars[0].Median != base.Median {
		t.Errorf("baseline alone: bars %+v, relative %v; want its median %v", bars, relative, base.Median)
	}
}

// TestWriteCountsRepeatsInTheSingular: a spec of 1 repeat is "1 repeat
// per cell".
func TestWriteCountsRepeatsInTheSingular(t *testing.T) {
	m, a := driftingRun(t)
	a.Repeats = 1
	var b bytes.Buffer
	if err := Write(&b, m, a, nil); err != nil {
		t.Fatal(err)
	}
	if doc := b.String(); !strings.Contains(doc, ", 1 repeat per cell</td>") {
		t.Errorf("the run's facts do not say \"1 repeat per cell\":\n%s", doc[strings.Index(doc, `<table class="facts">`):][:400])
	}
}
