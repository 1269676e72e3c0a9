package htmlreport

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"

	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/record"
)

// hostile is a cell ID from a spec that tries to inject markup.
const hostile = `<script>alert(1)</script>`

// fixture is a synthetic run: a baseline, three factor cells with data
// latencies (two with control latencies too), one of them with a hostile
// ID, and a cell without any valid run (no histograms).
type fixture struct {
	m     *results.Manifest
	a     *results.Analysis
	hists map[string]map[string]*hdrhistogram.Histogram
	// latencyPlots is how many latency plots the report must have.
	latencyPlots int
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cells := []results.CellInfo{
		{ID: "baseline", Config: map[string]string{"reactor": "lt", "batch": "16", "conns": "64"}, Describe: "level-triggered, batch 16"},
		{ID: "reactor=et-ready-queue", Factor: "reactor", Value: "et-ready-queue", Config: map[string]string{"reactor": "et-ready-queue", "batch": "16", "conns": "64"}, Describe: "edge-triggered with a ready queue"},
		{ID: "batch=256", Factor: "batch", Value: "256", Config: map[string]string{"reactor": "lt", "batch": "256", "conns": "64"}},
		{ID: hostile, Factor: "conns", Value: hostile, Config: map[string]string{"reactor": "lt", "batch": "16", "conns": hostile}, Describe: `"quoted" & <b>bold</b>`},
		{ID: "conns=1000", Factor: "conns", Value: "1000", Config: map[string]string{"reactor": "lt", "batch": "16", "conns": "1000"}},
	}
	m := &results.Manifest{
		Format: results.ManifestFormat,
		Tool:   results.Tool{Version: "(devel)", Commit: "0123456789abcdef", Modified: true, Go: "go1.26.8"},
		Spec:   results.SpecInfo{Name: "fixture", Source: "embedded:fixture", Text: "name: fixture\nrepeats: 3\n", Repeats: 3},
		Cells:  cells,
		Shards: []results.ShardInfo{
			{Index: 1, Count: 2, Cells: []string{"reactor=et-ready-queue", "batch=256"}, Placement: "server=0,loadgen=1", Mode: "lab",
				Machine: results.Machine{Hostname: "ci-1", Kernel: "6.1.0-40-amd64 #1 SMP", CPUModel: "AMD EPYC 7B13", CPUs: 2, OS: "linux", Arch: "amd64"},
				Started: start, Finished: start.Add(7*time.Minute + 3*time.Second)},
			{Index: 2, Count: 2, Cells: []string{hostile, "conns=1000"}, Placement: "server=0,loadgen=1", Mode: "lab",
				Machine: results.Machine{Hostname: "ci-2", Kernel: "6.1.0-40-amd64 #1 SMP", CPUModel: "AMD EPYC 7B13", CPUs: 2, OS: "linux", Arch: "amd64"},
				Started: start, Finished: start.Add(6*time.Minute + 58*time.Second)},
		},
	}
	for si, s := range m.Shards {
		seq := 0
		for _, id := range s.Cells {
			for rep := 1; rep <= 3; rep++ {
				for _, cell := range []string{"baseline", id} {
					seq++
					valid := id != "conns=1000" || cell == "baseline"
					r := results.RunRecord{Shard: s.Index, Seq: seq, Cell: cell, Repeat: rep, Pair: id,
						Dir: fmt.Sprintf("runs/%d-%03d", si+1, seq), Started: start, Mode: "lab", Valid: valid,
						Metrics: map[string]float64{results.MetricThroughput: 1e5}}
					if !valid {
						r.Invalid = []string{"anomalies: 3 frames lost"}
					}
					m.Runs = append(m.Runs, r)
				}
			}
		}
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	// hist records n latencies: a log-normal-ish body around medianUs
	// with a tail that reaches tailUs.
	hist := func(n int, medianUs, tailUs float64) *hdrhistogram.Histogram {
		h := record.NewHistogram()
		for i := 0; i < n; i++ {
			v := medianUs * (0.5 + rng.ExpFloat64()*0.5)
			if rng.IntN(1000) == 0 {
				v = tailUs * rng.Float64()
			}
			if err := h.RecordValue(int64(v * 1e3)); err != nil {
				t.Fatal(err)
			}
		}
		return h
	}
	hists := map[string]map[string]*hdrhistogram.Histogram{
		"baseline":               {"data": hist(200000, 40, 5000), "control": hist(20000, 25, 3000), "stop": hist(6, 300, 400)},
		"reactor=et-ready-queue": {"data": hist(220000, 32, 2500), "control": hist(20000, 18, 900)},
		"batch=256":              {"data": hist(250000, 60, 12000)},
		hostile:                  {"data": hist(150000, 45, 8000), "control": hist(15000, 30, 20000)},
		// conns=1000 has no valid run, so no histograms.
	}

	metric := func(name string, med, lo, hi float64, base bool, ratio float64, v results.Verdict) results.MetricResult {
		r := results.MetricResult{Name: name, N: 3, Median: med, Min: lo, Max: hi}
		if !base {
			r.BaselineN, r.BaselineMedian = 12, med/ratio
			r.Ratio, r.RatioMin, r.RatioMax, r.Pairs = ratio, ratio*0.95, ratio*1.04, 3
			r.P, r.PAdjusted, r.Verdict = 0.02, 0.1, v
		}
		return r
	}
	cellAnalysis := func(c results.CellInfo, runs, valid int, tput, tputRatio float64, v results.Verdict) results.CellAnalysis {
		base := c.Factor == ""
		ca := results.CellAnalysis{ID: c.ID, Factor: c.Factor, Value: c.Value, Describe: c.Describe, Runs: runs, ValidRuns: valid,
			Latency: map[string]record.ClassSummary{}}
		if valid == 0 {
			ca.Invalid = []string{"repeat 1: anomalies: 3 frames lost", "repeat 2: anomalies: 3 frames lost", "repeat 3: anomalies: 3 frames lost"}
			for _, mt := range results.Metrics {
				ca.Metrics = append(ca.Metrics, results.MetricResult{Name: mt.Name, Verdict: results.VerdictInconclusive})
			}
			return ca
		}
		for _, mt := range results.Metrics {
			switch mt.Name {
			case results.MetricThroughput:
				ca.Metrics = append(ca.Metrics, metric(mt.Name, tput, tput*0.97, tput*1.02, base, tputRatio, v))
			case results.MetricControlP999:
				ca.Metrics = append(ca.Metrics, metric(mt.Name, 900/tputRatio, 800/tputRatio, 1200/tputRatio, base, 1/tputRatio, v))
			case results.MetricAnomalies:
				ca.Metrics = append(ca.Metrics, metric(mt.Name, 0, 0, 0, base, 1, results.VerdictSame))
			default:
				ca.Metrics = append(ca.Metrics, metric(mt.Name, 123.4, 100, 150, base, 1.01, results.VerdictSame))
			}
		}
		for class, h := range hists[c.ID] {
			ca.Latency[class] = record.Summarize(h, 0)
		}
		return ca
	}
	a := &results.Analysis{
		Spec: "fixture", Repeats: 3, Alpha: 0.05,
		Method: "Mann-Whitney U test, two-sided, Holm-corrected over the cells and metrics; each sample is one value per valid run.",
		Cells: []results.CellAnalysis{
			cellAnalysis(cells[0], 12, 12, 1.2e5, 1, ""),
			cellAnalysis(cells[1], 3, 3, 1.5e5, 1.25, results.VerdictBetter),
			cellAnalysis(cells[2], 3, 3, 0.9e5, 0.75, results.VerdictWorse),
			cellAnalysis(cells[3], 3, 3, 1.21e5, 1.01, results.VerdictInconclusive),
			cellAnalysis(cells[4], 3, 0, 0, 0, ""),
		},
		Notes: []string{"cell conns=1000: 3 of 3 runs invalid (anomalies)", "only 3 repeats: few verdicts can reach alpha after the correction"},
	}
	// One plot per factor cell and class present: et (data, control),
	// batch (data), hostile (data, control); conns=1000 has none.
	return fixture{m: m, a: a, hists: hists, latencyPlots: 5}
}

func (f fixture) render(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, f.m, f.a, f.hists); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// barPlots is how many bar plots the fixture's report has.
const barPlots = 2

func TestWriteWellFormed(t *testing.T) {
	out := newFixture(t).render(t)
	d := xml.NewDecoder(bytes.NewReader(out))
	d.Strict = true
	d.Entity = xml.HTMLEntity
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("report is not well-formed: %v", err)
		}
	}
}

func TestWriteDeterministic(t *testing.T) {
	f := newFixture(t)
	if a, b := f.render(t), f.render(t); !bytes.Equal(a, b) {
		t.Fatal("two renders of the same inputs differ")
	}
}

// section returns the text of the element with the given id attribute:
// from its start tag to the next "</tag>".
func section(t *testing.T, doc, tag, id string) string {
	t.Helper()
	start := strings.Index(doc, fmt.Sprintf(`<%s id="%s"`, tag, id))
	if start < 0 {
		t.Fatalf("no <%s id=%q>", tag, id)
	}
	end := strings.Index(doc[start:], "</"+tag+">")
	if end < 0 {
		t.Fatalf("<%s id=%q> not closed", tag, id)
	}
	return doc[start : start+end]
}

func TestWriteCellsAndEscaping(t *testing.T) {
	f := newFixture(t)
	doc := string(f.render(t))
	if strings.Contains(doc, hostile) {
		t.Errorf("the hostile cell ID appears unescaped")
	}
	if strings.Contains(doc, "<b>bold</b>") {
		t.Errorf("a hostile description appears unescaped")
	}
	summary := section(t, doc, "table", "summary-table")
	details := section(t, doc, "section", "details")
	latency := section(t, doc, "section", "latency")
	for _, c := range f.m.Cells {
		id := `<span class="id">` + html.EscapeString(c.ID) + `</span>`
		// html/template writes &#34; for '"', html.EscapeString &#39;
		// for '\''; the fixture's IDs have neither.
		if n := strings.Count(summary, id); n != 1 {
			t.Errorf("summary table has cell %q %d times, want once", c.ID, n)
		}
		if n := strings.Count(details, "<h3>"+id+"</h3>"); n != 1 {
			t.Errorf("details have cell %q %d times, want once", c.ID, n)
		}
		want := 1
		if c.Baseline() {
			want = 0
		}
		if n := strings.Count(latency, "<h3>"+id); n != want {
			t.Errorf("latency section has cell %q %d times, want %d", c.ID, n, want)
		}
	}
	if !strings.Contains(latency, "it has no valid run") {
		t.Errorf("the cell without histograms is not reported as such")
	}
	for _, note := range f.a.Notes {
		if !strings.Contains(section(t, doc, "section", "notes"), html.EscapeString(note)) {
			t.Errorf("note %q missing", note)
		}
	}
	for _, want := range []string{"ci-1", "AMD EPYC 7B13", "6.1.0-40-amd64", "server=0,loadgen=1", "7m3s", "21 of 24 valid", "0123456789abcdef", "Mann-Whitney"} {
		if !strings.Contains(doc, want) {
			t.Errorf("header lacks %q", want)
		}
	}
	for _, class := range []string{`class="n better"`, `class="n worse"`, `class="n inconclusive"`} {
		if !strings.Contains(summary, class) {
			t.Errorf("summary table has no cell %s", class)
		}
	}
}

var (
	imgRe      = regexp.MustCompile(`<img [^>]*>`)
	externalRe = regexp.MustCompile(`(?i)(src|href)\s*=\s*"[^"]*//`)
)

func TestWritePlots(t *testing.T) {
	f := newFixture(t)
	doc := string(f.render(t))
	imgs := imgRe.FindAllString(doc, -1)
	kinds := map[string]int{}
	for _, img := range imgs {
		if !strings.Contains(html.UnescapeString(img), `src="data:image/svg+xml;base64,`) {
			t.Errorf("plot is not an inline SVG: %.120s", img)
		}
		for _, k := range []string{PlotLatency, PlotThroughput, PlotControl} {
			if strings.Contains(img, `data-plot="`+k+`"`) {
				kinds[k]++
			}
		}
	}
	if len(imgs) != f.latencyPlots+barPlots {
		t.Errorf("%d images, want %d", len(imgs), f.latencyPlots+barPlots)
	}
	if kinds[PlotLatency] != f.latencyPlots || kinds[PlotThroughput] != 1 || kinds[PlotControl] != 1 {
		t.Errorf("plots by kind %v, want %d latency and one of each bar plot", kinds, f.latencyPlots)
	}
	if strings.Count(doc, `data-class="control"`) != 2 {
		t.Errorf("want 2 control latency plots")
	}
	if m := externalRe.FindString(doc); m != "" {
		t.Errorf("external reference %q", m)
	}
	for _, s := range []string{"http://", "https://"} {
		if strings.Contains(doc, s) {
			t.Errorf("report contains %q", s)
		}
	}
}

// TestWriteMissingHistograms renders with no histograms at all: every
// factor cell says it has none, and the bar plots remain.
func TestWriteMissingHistograms(t *testing.T) {
	f := newFixture(t)
	f.hists = nil
	doc := string(f.render(t))
	if n := strings.Count(doc, `data-plot="latency"`); n != 0 {
		t.Errorf("%d latency plots without histograms", n)
	}
	if n := strings.Count(doc, `class="missing"`); n != len(f.m.Cells)-1 {
		t.Errorf("%d missing-plot notes, want %d", n, len(f.m.Cells)-1)
	}
}

func TestPercentileCurve(t *testing.T) {
	h := record.NewHistogram()
	for v := int64(1); v <= 10000; v++ {
		if err := h.RecordValue(v * 1000); err != nil {
			t.Fatal(err)
		}
	}
	c := percentileCurve(h)
	last := c[len(c)-1]
	if last.X != 10000 || last.Y < 9990 || last.Y > 10010 {
		t.Errorf("last point %v, want the max, 10 ms, at x = count", last)
	}
	for i := 1; i < len(c); i++ {
		if c[i].X <= c[i-1].X || c[i].Y < c[i-1].Y {
			t.Fatalf("curve not increasing at %d: %v then %v", i, c[i-1], c[i])
		}
	}
	// x = 100 is p99: about 9.9 ms.
	for _, p := range c {
		if p.X >= 99.9 && p.X <= 100.1 && (p.Y < 9850 || p.Y > 9950) {
			t.Errorf("p99 at %v, want about 9900 µs", p)
		}
	}
}

func TestLatencyTicks(t *testing.T) {
	for _, tc := range []struct {
		min, max float64
		lo, hi   float64
		labels   string
	}{
		{3, 7, 2, 10, "2 µs,5 µs,10 µs"},
		{12, 5000, 10, 10000, "10 µs,100 µs,1 ms,10 ms"},
		{0.5, 30, 0.5, 50, "500 ns,1 µs,2 µs,5 µs,10 µs,20 µs,50 µs"},
	} {
		ticks, lo, hi := latencyTicks(tc.min, tc.max)
		var labels []string
		for _, tk := range ticks {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if lo != tc.lo || hi != tc.hi || strings.Join(labels, ",") != tc.labels {
			t.Errorf("latencyTicks(%v, %v) = %v, %v, %q; want %v, %v, %q", tc.min, tc.max, lo, hi, strings.Join(labels, ","), tc.lo, tc.hi, tc.labels)
		}
	}
}

// TestWriteBaselineOnly renders a spec without factors: the baseline's own
// distributions are plotted, without an overlay.
func TestWriteBaselineOnly(t *testing.T) {
	f := newFixture(t)
	f.a.Cells = f.a.Cells[:1]
	doc := string(f.render(t))
	if n := strings.Count(doc, `data-plot="latency"`); n != 2 {
		t.Errorf("%d latency plots, want the baseline's data and control", n)
	}
	if strings.Contains(doc, "over the baseline") {
		t.Errorf("a baseline-only report overlays the baseline on itself")
	}
}

var (
	thRe      = regexp.MustCompile(`<th[^>]*>([^<]*)`)
	tdClassRe = regexp.MustCompile(`<td class="([^"]*)"`)
)

// TestSummaryCellClasses: each summary cell's class is its own verdict's:
// in the row of a cell that is better on throughput and worse on data p99
// the throughput cell is "better" and the data p99 cell "worse" (and the
// metrics' detail rows likewise), whatever the metric's direction.
func TestSummaryCellClasses(t *testing.T) {
	f := newFixture(t)
	const id = "reactor=et-ready-queue"
	for ci := range f.a.Cells {
		c := &f.a.Cells[ci]
		if c.ID != id {
			continue
		}
		for mi := range c.Metrics {
			mr := &c.Metrics[mi]
			switch mr.Name {
			case results.MetricThroughput:
				if mr.Verdict != results.VerdictBetter {
					t.Fatalf("fixture: %s throughput is %s", id, mr.Verdict)
				}
			case results.MetricDataP99:
				mr.Median, mr.Ratio, mr.RatioMin, mr.RatioMax = 160, 1.3, 1.2, 1.4
				mr.Verdict = results.VerdictWorse
			}
		}
	}
	doc := string(f.render(t))
	summary := section(t, doc, "table", "summary-table")
	var heads []string
	for _, m := range thRe.FindAllStringSubmatch(summary, -1) {
		heads = append(heads, strings.TrimSpace(m[1]))
	}
	start := strings.Index(summary, `<span class="id">`+id+`</span>`)
	if start < 0 {
		t.Fatalf("no summary row for %s", id)
	}
	row := summary[start:]
	row = row[:strings.Index(row, "</tr>")]
	// The row's first <td> (the cell's name) has no class and is before
	// start: the matches are the runs column, then one per headline.
	classes := tdClassRe.FindAllStringSubmatch(row, -1)
	if len(classes) != len(heads)-1 {
		t.Fatalf("row of %s has %d classed cells, the header %d columns %q", id, len(classes), len(heads), heads)
	}
	classOf := func(label string) string {
		for i, h := range heads {
			if h == label {
				return classes[i-1][1]
			}
		}
		t.Fatalf("no column %q in %q", label, heads)
		return ""
	}
	for label, want := range map[string]string{"throughput": "n better", "data p99": "n worse"} {
		if got := classOf(label); got != want {
			t.Errorf("%s, %s: class %q, want %q", id, label, got, want)
		}
	}
	// In the cell's detail table the ratio and verdict cells carry the
	// class too.
	details := section(t, doc, "section", "details")
	det := details[strings.Index(details, "<h3><span class=\"id\">"+id+"</span>"):]
	det = det[:strings.Index(det, "</table>")]
	for label, want := range map[string]string{"throughput": "better", "data p99": "worse"} {
		i := strings.Index(det, ">"+label+"</td>")
		if i < 0 {
			t.Fatalf("no detail row %q for %s", label, id)
		}
		r := det[i:]
		r = r[:strings.Index(r, "</tr>")]
		if !strings.Contains(r, `<td class="n `+want+`">`) || !strings.Contains(r, `<td class="`+want+`">`) {
			t.Errorf("%s detail row %s: want ratio and verdict cells of class %q: %s", id, label, want, r)
		}
	}
}

// TestBarPlotScale: values two orders of magnitude apart are drawn as dots
// on a log scale (bars from 0 would hide the small ones); close values,
// or any value not above 0, as bars.
func TestBarPlotScale(t *testing.T) {
	wide := []bar{{Label: "baseline", Median: 600_000, Min: 300_000, Max: 1_300_000, Baseline: true},
		{Label: "prio", Median: 5_000, Min: 2_500, Max: 8_000}}
	close := []bar{{Label: "baseline", Median: 18_000, Min: 17_000, Max: 19_000, Baseline: true},
		{Label: "prio", Median: 11_000, Min: 9_000, Max: 14_000}}
	zero := []bar{{Label: "baseline", Median: 600_000, Min: 0, Max: 1_300_000, Baseline: true},
		{Label: "prio", Median: 5_000, Min: 2_500, Max: 8_000}}
	for _, c := range []struct {
		name string
		bars []bar
		log  bool
	}{{"wide", wide, true}, {"close", close, false}, {"zero", zero, false}} {
		if got := useLog(c.bars); got != c.log {
			t.Errorf("%s: useLog = %v, want %v", c.name, got, c.log)
		}
		p, _, err := barPlot("t", "x", c.bars)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, isLog := p.X.Scale.(plot.LogScale)
		if isLog != c.log {
			t.Errorf("%s: log x scale %v, want %v", c.name, isLog, c.log)
		}
		if _, err := svgURI(p, barW, 200); err != nil {
			t.Errorf("%s: render: %v", c.name, err)
		}
	}
}
