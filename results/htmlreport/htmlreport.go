// Package htmlreport has one job: render a matrix run directory's analysis
// as one self-contained HTML file with plots.
//
// The file needs nothing at view time: the plots are SVG drawn by
// gonum/plot and embedded as data URIs, the style sheet is inline, and
// there is no script. Everything that comes from the spec (cell IDs,
// values, descriptions) goes through html/template, so a hostile cell ID
// is text, never markup. The output depends only on the inputs: no
// rendering time, and every map is walked in sorted order, so two renders
// of the same run directory are byte for byte the same.
//
// The report shows, in this order: the notes a reader must see; where and
// how the runs were made; the method; a summary table (each cell's
// headline metrics as ratios to the baseline, with their range and the
// verdict); bar plots of throughput and control p99.9 per cell, drawing
// what the table shows (each factor cell's ratio to the baseline, the
// baseline at 1; the baseline's value when there is no factor cell); for each
// factor cell, its latency percentile distributions (data, and control
// where present) drawn over the baseline's; and every metric of every
// cell.
package htmlreport

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot/vg"

	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/figure"
)

// The histogram classes that get latency plots, in plot order.
const (
	ClassData    = "data"
	ClassControl = "control"
)

// PlotClasses are the classes whose percentile distributions are plotted.
var PlotClasses = []string{ClassData, ClassControl}

// The data-plot attribute of each plot's <img>, for tests and styles.
const (
	PlotLatency    = "latency"
	PlotThroughput = "throughput"
	PlotControl    = "control-p999"
)

// Sizes of the plots.
var (
	latencyW, latencyH = 5.2 * vg.Inch, 3.4 * vg.Inch
	barW               = 7.5 * vg.Inch
)

// Write renders the report of the run described by m and analysed in a.
// hists maps cell ID → class → the cell's merged measured histogram in
// nanoseconds, as results.CellHistograms returns it; a cell without valid
// runs may be missing, and the report says so where its plots would be.
// Write renders into memory first, so w gets the whole page or nothing.
func Write(w io.Writer, m *results.Manifest, a *results.Analysis, hists map[string]map[string]*hdrhistogram.Histogram) error {
	if m == nil || a == nil {
		return errors.New("htmlreport: nil manifest or analysis")
	}
	pg, err := build(m, a, hists)
	if err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	var b bytes.Buffer
	if err := page.Execute(&b, pg); err != nil {
		return fmt.Errorf("htmlreport: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// view is what the template renders.
type view struct {
	Spec     string
	Source   string
	SpecText string
	// Repeats is the spec's repeats per cell, with its noun ("1 repeat").
	Repeats   string
	Tool      string
	Go        string
	Placement string
	Mode      string
	// RunsValid of RunsTotal passed the self-check; RunsContended of the
	// valid ones were left out of the analysis (results.RunCounts).
	RunsValid     int
	RunsTotal     int
	RunsContended int
	Shards        []shardView
	Method        string
	Alpha         string
	Notes         []string

	Headline []metricHead
	Summary  []summaryRow
	Bars     []plotFigure
	BarNote  string
	Latency  []latencySection
	Details  []detailView
}

type shardView struct {
	Shard, Host, Kernel, CPU, CPUs, Placement, Mode, Started, Wall string
	Runs                                                           string
	Interrupted                                                    bool
}

type metricHead struct{ Label, Unit, Describe string }

type summaryRow struct {
	ID, Describe string
	Baseline     bool
	Runs         string
	BadRuns      bool
	Cells        []summaryCell
}

type summaryCell struct {
	Text, Range, Verdict, Class, Title string
}

type plotFigure struct {
	Kind, Class string
	Src         template.URL
	Alt         string
	Caption     string
}

type latencySection struct {
	ID, Describe string
	Missing      string
	Figures      []plotFigure
}

type detailView struct {
	ID, Describe, Factor string
	Runs                 string
	Invalid              []string
	Config               []kv
	Metrics              []metricRow
	// NoMetrics is the sentence shown instead of the metric table when no
	// metric has samples.
	NoMetrics string
	Latency   []classRow
	// LatencyNote names the latency classes without samples.
	LatencyNote string
}

type kv struct{ K, V string }

type metricRow struct {
	Label, Name, Unit, Describe string
	N, Median, Range, Base      string
	Ratio, RatioRange, Pairs, P string
	Verdict, Class              string
	Compared                    bool
}

type classRow struct {
	Class                                        string
	Count, P50, P90, P99, P999, P9999, Max, Mean string
	Clamped                                      string
}

// build is the page's view of run directory m, its analysis a and the
// cells' merged histograms: the header, the shards, the summary table,
// the plots and each cell's details.
func build(m *results.Manifest, a *results.Analysis, hists map[string]map[string]*hdrhistogram.Histogram) (*view, error) {
	v := headerView(m, a)
	v.addShards(m)

	baseID := ""
	if len(a.Cells) > 0 && a.Cells[0].Factor == "" {
		baseID = a.Cells[0].ID
	} else if len(m.Cells) > 0 {
		baseID = m.Cells[0].ID
	}

	v.addSummary(a)
	if err := v.addBars(a); err != nil {
		return nil, err
	}
	if err := v.addLatency(a, baseID, hists); err != nil {
		return nil, err
	}
	for _, c := range a.Cells {
		v.Details = append(v.Details, detail(m, c))
	}
	return v, nil
}

// headerView is the view with the page's header filled in: the spec, the
// tool, the method, the notes and the count of runs.
func headerView(m *results.Manifest, a *results.Analysis) *view {
	v := &view{
		Spec:     a.Spec,
		Source:   m.Spec.Source,
		SpecText: m.Spec.Text,
		Repeats:  figure.Counted(a.Repeats, "repeat", "repeats"),
		Go:       m.Tool.Go,
		Method:   a.Method,
		Notes:    a.Notes,
	}
	if v.Spec == "" {
		v.Spec = m.Spec.Name
	}
	if a.Alpha > 0 {
		v.Alpha = strconv.FormatFloat(a.Alpha, 'g', -1, 64)
	}
	v.Tool = m.Tool.Version
	if m.Tool.Commit != "" {
		v.Tool += " (" + m.Tool.Commit
		if m.Tool.Modified {
			v.Tool += ", modified"
		}
		v.Tool += ")"
	}
	n := m.AllRuns()
	v.RunsTotal, v.RunsValid, v.RunsContended = n.Total, n.Valid, n.Contended
	return v
}

// addShards adds a row for each of m's shards, and the placement and mode
// they share (or the distinct ones).
func (v *view) addShards(m *results.Manifest) {
	var placements, modes []string
	for _, s := range m.Shards {
		sv := shardView{
			Shard:       fmt.Sprintf("%d/%d", s.Index, s.Count),
			Host:        s.Machine.Hostname,
			Kernel:      s.Machine.Kernel,
			CPU:         s.Machine.CPUModel,
			CPUs:        strconv.Itoa(s.Machine.CPUs),
			Placement:   placementText(s),
			Mode:        s.Mode,
			Interrupted: s.Interrupted,
		}
		if !s.Started.IsZero() {
			sv.Started = s.Started.UTC().Format(time.RFC3339)
		}
		switch {
		case s.Started.IsZero() || s.Finished.IsZero():
			sv.Wall = "unknown"
		default:
			sv.Wall = s.Finished.Sub(s.Started).Round(time.Second).String()
		}
		n := m.ShardRuns(s.Index)
		sv.Runs = fmt.Sprintf("%d/%d", n.Valid, n.Total)
		if n.Contended > 0 {
			sv.Runs += fmt.Sprintf(" (%d contended)", n.Contended)
		}
		v.Shards = append(v.Shards, sv)
		placements = append(placements, placementText(s))
		modes = append(modes, s.Mode)
	}
	v.Placement = same(placements)
	v.Mode = same(modes)
}

// placementText is the placement shard s asked for and, when recorded,
// what it resolved to there (results.Resolved.Text).
func placementText(s results.ShardInfo) string {
	if t := s.Resolved.Text(); t != "" {
		return s.Placement + ", placed: " + t
	}
	return s.Placement
}

// addSummary adds the summary table: a column for each headline metric
// (the catalogue's gates that some cell has, as in report.md), a row for
// each cell.
func (v *view) addSummary(a *results.Analysis) {
	heads := results.HeadlineMetrics(a)
	for _, mt := range heads {
		v.Headline = append(v.Headline, metricHead{Label: mt.Label, Unit: mt.Unit, Describe: mt.Describe})
	}
	for _, c := range a.Cells {
		row := summaryRow{ID: c.ID, Describe: c.Describe, Baseline: c.Factor == "",
			Runs: fmt.Sprintf("%d/%d", c.ValidRuns, c.Runs), BadRuns: c.ValidRuns < c.Runs}
		for _, mt := range heads {
			row.Cells = append(row.Cells, summarize(c, mt))
		}
		v.Summary = append(v.Summary, row)
	}
}

// same returns the one value of vs, or the distinct values joined when
// shards differ.
func same(vs []string) string {
	u := slices.Compact(slices.Sorted(slices.Values(vs)))
	return strings.Join(u, " / ")
}

func metricOf(c results.CellAnalysis, name string) (results.MetricResult, bool) {
	for _, r := range c.Metrics {
		if r.Name == name {
			return r, r.N > 0
		}
	}
	return results.MetricResult{}, false
}

// summarize is one cell of the summary table: the baseline's value, or a
// factor cell's ratio to it and the verdict, or what is missing for one,
// in report.md's words and figures.
func summarize(c results.CellAnalysis, mt results.Metric) summaryCell {
	r, ok := metricOf(c, mt.Name)
	if !ok {
		return summaryCell{Text: results.NoSamples, Title: "no valid run of this cell has a " + mt.Label + " value"}
	}
	if c.Factor == "" {
		return summaryCell{
			Text:  withUnit(figure.Value(r.Median), mt.Unit),
			Range: "[" + figure.Range(r.Min, r.Max) + "]",
			Title: fmt.Sprintf("median of %d valid runs, [min–max]", r.N),
		}
	}
	if gap := r.Gap(mt.Label); gap != "" {
		return summaryCell{Text: withUnit(figure.Value(r.Median), mt.Unit), Verdict: gap,
			Title: fmt.Sprintf("median of %d valid runs; no comparison with the baseline", r.N)}
	}
	sc := summaryCell{Verdict: string(r.Verdict), Class: verdictClass(r.Verdict)}
	if gap := r.RatioGap(); gap != "" {
		sc.Text = withUnit(figure.Value(r.Median), mt.Unit)
		sc.Range = gap
		sc.Title = fmt.Sprintf("median %s vs baseline %s; adjusted p %s",
			withUnit(figure.Value(r.Median), mt.Unit), withUnit(figure.Value(r.BaselineMedian), mt.Unit), figure.PValue(r.PAdjusted))
	} else {
		sc.Text = figure.Ratio(r.Ratio)
		sc.Range = "[" + figure.Range(r.RatioMin, r.RatioMax) + "]"
		sc.Title = fmt.Sprintf("median %s vs baseline %s; median of %d pair ratios, [min–max]; adjusted p %s",
			withUnit(figure.Value(r.Median), mt.Unit), withUnit(figure.Value(r.BaselineMedian), mt.Unit), r.Pairs, figure.PValue(r.PAdjusted))
	}
	return sc
}

func verdictClass(v results.Verdict) string {
	switch v {
	case results.VerdictBetter:
		return "better"
	case results.VerdictWorse:
		return "worse"
	case results.VerdictDifferent:
		return "different"
	case results.VerdictInconclusive:
		return "inconclusive"
	case results.VerdictSame:
		return "same"
	}
	return ""
}

// addBars adds a bar plot of throughput and one of control p99.9, each
// drawing what the summary table shows (barsOf): the factor cells' ratios
// to the baseline, or the baseline's value in a spec without factor cells.
func (v *view) addBars(a *results.Analysis) error {
	for _, spec := range []struct {
		kind, metric, title string
	}{
		{PlotThroughput, results.MetricThroughput, "Throughput per cell"},
		{PlotControl, results.MetricControlP999, "Control PING round trip p99.9 per cell"},
	} {
		mt, _ := results.MetricByName(spec.metric)
		bars, relative, missing := barsOf(a, mt)
		for _, m := range missing {
			v.BarNote += m + ". "
		}
		if len(bars) == 0 {
			v.BarNote += fmt.Sprintf("No cell measured %s. ", mt.Label)
			continue
		}
		xlabel := mt.Label
		if mt.Unit != "" {
			xlabel += " (" + mt.Unit + ")"
		}
		xlabel += ": median of valid runs, whiskers min–max"
		caption := fmt.Sprintf("%s (%s). The grey one is the baseline.", mt.Label, mt.Describe)
		if relative {
			xlabel = mt.Label + ": ratio to the baseline, median of per-repeat ratios, whiskers min–max"
			caption = fmt.Sprintf("%s (%s), each cell as its ratio to the baseline, as the summary table gives it: the median of the per-repeat ratios "+
				"(each repeat's cell run over the same repeat's baseline run), whiskers their min–max; not the ratio of the medians. "+
				"The grey one is the baseline, ×1.", mt.Label, mt.Describe)
		}
		p, h, err := barPlot(spec.title, xlabel, bars)
		if err != nil {
			return fmt.Errorf("%s plot: %w", spec.metric, err)
		}
		src, err := svgURI(p, barW, h)
		if err != nil {
			return fmt.Errorf("%s plot: %w", spec.metric, err)
		}
		v.Bars = append(v.Bars, plotFigure{Kind: spec.kind, Class: "bar", Src: src, Alt: spec.title, Caption: caption})
	}
	return nil
}

// barsOf is what a bar plot of metric mt draws, the quantity the summary
// table shows, in the same direction. With factor cells (relative) each
// factor cell is its ratio to the baseline (the median of the per-repeat
// ratios, whiskers their min–max) and the baseline a bar of 1; a factor
// cell without a ratio is left out, and missing says why. Without factor
// cells, the baseline is its median of valid runs, whiskers min–max.
func barsOf(a *results.Analysis, mt results.Metric) (bars []bar, relative bool, missing []string) {
	relative = slices.ContainsFunc(a.Cells, func(c results.CellAnalysis) bool { return c.Factor != "" })
	for _, c := range a.Cells {
		r, ok := metricOf(c, mt.Name)
		switch {
		case !ok:
		case !relative:
			bars = append(bars, bar{Label: c.ID, Median: r.Median, Min: r.Min, Max: r.Max, Baseline: true})
		case c.Factor == "":
			bars = append(bars, bar{Label: c.ID, Median: 1, Min: 1, Max: 1, Baseline: true})
		case r.Gap(mt.Label) != "":
			missing = append(missing, fmt.Sprintf("%s: no ratio of %s to the baseline (%s)", c.ID, mt.Label, r.Gap(mt.Label)))
		case r.RatioGap() != "":
			missing = append(missing, fmt.Sprintf("%s: no ratio of %s to the baseline (%s)", c.ID, mt.Label, r.RatioGap()))
		default:
			bars = append(bars, bar{Label: c.ID, Median: r.Ratio, Min: r.RatioMin, Max: r.RatioMax})
		}
	}
	return bars, relative, missing
}

// addLatency adds, for each factor cell (or the baseline alone when the
// spec has no factors), the percentile distribution of each plotted class
// the cell or the baseline has, over the baseline's.
func (v *view) addLatency(a *results.Analysis, baseID string, hists map[string]map[string]*hdrhistogram.Histogram) error {
	var cells []results.CellAnalysis
	for _, c := range a.Cells {
		if c.Factor != "" {
			cells = append(cells, c)
		}
	}
	alone := len(cells) == 0
	if alone && len(a.Cells) > 0 {
		cells = a.Cells[:1]
	}
	has := func(id, class string) *hdrhistogram.Histogram {
		h := hists[id][class]
		if h == nil || h.TotalCount() == 0 {
			return nil
		}
		return h
	}
	for _, c := range cells {
		sec := latencySection{ID: c.ID, Describe: c.Describe}
		if len(hists[c.ID]) == 0 {
			sec.Missing = "No latency histograms for this cell: it has no valid run."
			if c.ValidRuns > 0 {
				sec.Missing = "No latency histograms were given for this cell."
			}
			v.Latency = append(v.Latency, sec)
			continue
		}
		for _, class := range PlotClasses {
			ch := has(c.ID, class)
			if ch == nil {
				continue
			}
			cell := &curve{Label: fmt.Sprintf("%s (%s values)", shorten(c.ID, maxBarLabel), figure.Count(ch.TotalCount())), XYs: percentileCurve(ch), Intervals: percentileIntervals(ch)}
			var base *curve
			caption := fmt.Sprintf("%s latency percentiles of %s", class, c.ID)
			if !alone {
				if bh := has(baseID, class); bh != nil {
					base = &curve{Label: fmt.Sprintf("%s (%s values)", shorten(baseID, maxBarLabel), figure.Count(bh.TotalCount())), XYs: percentileCurve(bh)}
					caption += " (blue) over the baseline's (grey, dashed)"
				} else {
					caption += "; the baseline has no " + class + " histogram"
				}
			}
			caption += ": merged measured histograms of the valid runs; the right end is the maximum."
			p, err := latencyPlot(fmt.Sprintf("%s: %s latency", shorten(c.ID, 60), class), cell, base)
			if err != nil {
				return fmt.Errorf("%s %s plot: %w", c.ID, class, err)
			}
			src, err := svgURI(p, latencyW, latencyH)
			if err != nil {
				return fmt.Errorf("%s %s plot: %w", c.ID, class, err)
			}
			sec.Figures = append(sec.Figures, plotFigure{Kind: PlotLatency, Class: class, Src: src,
				Alt: fmt.Sprintf("%s latency percentile distribution of %s", class, c.ID), Caption: caption})
		}
		if len(sec.Figures) == 0 {
			sec.Missing = "No data or control latencies were recorded for this cell."
		}
		v.Latency = append(v.Latency, sec)
	}
	return nil
}

// detail is a cell's details: its metrics with samples (NoMetricSamples
// when none has), each factor cell's comparison or what it lacks, and its
// latency classes with samples (the others named in LatencyNote), in
// report.md's words and figures.
func detail(m *results.Manifest, c results.CellAnalysis) detailView {
	d := detailView{ID: c.ID, Describe: c.Describe, Runs: fmt.Sprintf("%d of %d runs valid", c.ValidRuns, c.Runs), Invalid: c.Invalid}
	if c.Factor != "" {
		d.Factor = c.Factor + " = " + c.Value
	}
	if ci, ok := m.Cell(c.ID); ok {
		for _, k := range slices.Sorted(maps.Keys(ci.Config)) {
			d.Config = append(d.Config, kv{k, ci.Config[k]})
		}
	}
	for _, r := range c.Metrics {
		if r.N == 0 {
			continue
		}
		mt, ok := results.MetricByName(r.Name)
		if !ok {
			mt = results.Metric{Name: r.Name, Label: r.Name}
		}
		row := metricRow{Label: mt.Label, Name: mt.Name, Unit: mt.Unit, Describe: mt.Describe, N: strconv.Itoa(r.N),
			Median: figure.Value(r.Median), Range: figure.Range(r.Min, r.Max)}
		if c.Factor != "" {
			row.Compared = true
			row.Pairs = strconv.Itoa(r.Pairs)
			row.Base, row.Ratio, row.RatioRange, row.P = figure.NotAvailable, figure.NotAvailable, figure.NotAvailable, figure.NotAvailable
			if gap := r.Gap(mt.Label); gap != "" {
				row.Verdict = gap
			} else {
				row.Base = figure.Value(r.BaselineMedian)
				if gap := r.RatioGap(); gap != "" {
					row.Ratio = gap
				} else {
					row.Ratio = figure.Ratio(r.Ratio)
					row.RatioRange = figure.Range(r.RatioMin, r.RatioMax)
				}
				row.P = figure.PValue(r.P) + " / " + figure.PValue(r.PAdjusted)
				row.Verdict, row.Class = string(r.Verdict), verdictClass(r.Verdict)
				if note := r.IntervalNote(); note != "" {
					row.Verdict += "; " + note
				}
			}
		}
		d.Metrics = append(d.Metrics, row)
	}
	if len(d.Metrics) == 0 {
		d.NoMetrics = results.NoMetricSamples
	}
	sampled, empty := results.LatencyClasses(c.Latency)
	for _, class := range sampled {
		s := c.Latency[class]
		d.Latency = append(d.Latency, classRow{
			Class: class, Count: figure.Count(s.Count),
			P50: s.Cell("p50", s.P50Us), P90: s.Cell("p90", s.P90Us), P99: s.Cell("p99", s.P99Us),
			P999: s.Cell("p99.9", s.P999Us), P9999: s.Cell("p99.99", s.P9999Us),
			Max: figure.Value(s.MaxUs), Mean: figure.Value(s.MeanUs), Clamped: figure.Count(s.Clamped),
		})
	}
	d.LatencyNote = results.NoSamplesNote(empty)
	return d
}

// withUnit is figure.WithUnit with a no-break space, so that a figure and
// its unit stay on one line.
func withUnit(s, unit string) string {
	if unit == "" {
		return s
	}
	return s + "\u00a0" + unit
}
