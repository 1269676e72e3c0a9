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
// verdict); bar plots of throughput and control p99.9 per cell; for each
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
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot/vg"

	"github.com/reactorlab/reactorlab/results"
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
	Spec      string
	Source    string
	SpecText  string
	Repeats   int
	Tool      string
	Go        string
	Placement string
	Mode      string
	RunsValid int
	RunsTotal int
	Shards    []shardView
	Method    string
	Alpha     string
	Notes     []string

	Headline []metricHead
	Summary  []summaryRow
	Bars     []figure
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

type figure struct {
	Kind, Class string
	Src         template.URL
	Alt         string
	Caption     string
}

type latencySection struct {
	ID, Describe string
	Missing      string
	Figures      []figure
}

type detailView struct {
	ID, Describe, Factor string
	Runs                 string
	Invalid              []string
	Config               []kv
	Metrics              []metricRow
	Latency              []classRow
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

func build(m *results.Manifest, a *results.Analysis, hists map[string]map[string]*hdrhistogram.Histogram) (*view, error) {
	v := &view{
		Spec:     a.Spec,
		Source:   m.Spec.Source,
		SpecText: m.Spec.Text,
		Repeats:  a.Repeats,
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
	for _, r := range m.Runs {
		v.RunsTotal++
		if r.Valid {
			v.RunsValid++
		}
	}
	var placements, modes []string
	for _, s := range m.Shards {
		sv := shardView{
			Shard:       fmt.Sprintf("%d/%d", s.Index, s.Count),
			Host:        s.Machine.Hostname,
			Kernel:      s.Machine.Kernel,
			CPU:         s.Machine.CPUModel,
			CPUs:        strconv.Itoa(s.Machine.CPUs),
			Placement:   s.Placement,
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
		valid, total := m.ShardRuns(s.Index)
		sv.Runs = fmt.Sprintf("%d/%d", valid, total)
		v.Shards = append(v.Shards, sv)
		placements = append(placements, s.Placement)
		modes = append(modes, s.Mode)
	}
	v.Placement = same(placements)
	v.Mode = same(modes)

	baseID := ""
	if len(a.Cells) > 0 && a.Cells[0].Factor == "" {
		baseID = a.Cells[0].ID
	} else if len(m.Cells) > 0 {
		baseID = m.Cells[0].ID
	}

	// The headline metrics are the catalogue's gates.
	var heads []results.Metric
	for _, mt := range results.Metrics {
		if mt.Gate {
			heads = append(heads, mt)
			v.Headline = append(v.Headline, metricHead{Label: mt.Label, Unit: mt.Unit, Describe: mt.Describe})
		}
	}
	for _, c := range a.Cells {
		row := summaryRow{ID: c.ID, Describe: c.Describe, Baseline: c.Factor == "",
			Runs: fmt.Sprintf("%d/%d", c.ValidRuns, c.Runs), BadRuns: c.ValidRuns < c.Runs}
		for _, mt := range heads {
			row.Cells = append(row.Cells, summarize(c, mt))
		}
		v.Summary = append(v.Summary, row)
	}

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
// factor cell's ratio to it and the verdict.
func summarize(c results.CellAnalysis, mt results.Metric) summaryCell {
	r, ok := metricOf(c, mt.Name)
	if !ok {
		return summaryCell{Text: "—", Title: "not measured"}
	}
	if c.Factor == "" {
		return summaryCell{
			Text:  withUnit(num(r.Median), mt.Unit),
			Range: "[" + num(r.Min) + "–" + num(r.Max) + "]",
			Title: fmt.Sprintf("median of %d valid runs, [min–max]", r.N),
		}
	}
	sc := summaryCell{Verdict: string(r.Verdict), Class: verdictClass(r.Verdict)}
	if r.Pairs == 0 || r.Ratio == 0 {
		sc.Text = withUnit(num(r.Median), mt.Unit)
		sc.Title = "no pair with both runs valid: no ratio"
	} else {
		sc.Text = ratio(r.Ratio) + "×"
		sc.Range = "[" + ratio(r.RatioMin) + "–" + ratio(r.RatioMax) + "]"
		sc.Title = fmt.Sprintf("median %s vs baseline %s; median of %d pair ratios, [min–max]; adjusted p %s",
			withUnit(num(r.Median), mt.Unit), withUnit(num(r.BaselineMedian), mt.Unit), r.Pairs, pval(r.PAdjusted))
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

func (v *view) addBars(a *results.Analysis) error {
	for _, spec := range []struct {
		kind, metric, title string
	}{
		{PlotThroughput, results.MetricThroughput, "Throughput per cell"},
		{PlotControl, results.MetricControlP999, "Control PING round trip p99.9 per cell"},
	} {
		mt, _ := results.MetricByName(spec.metric)
		var bars []bar
		for _, c := range a.Cells {
			r, ok := metricOf(c, spec.metric)
			if !ok {
				continue
			}
			bars = append(bars, bar{Label: c.ID, Median: r.Median, Min: r.Min, Max: r.Max, Baseline: c.Factor == ""})
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
		p, h, err := barPlot(spec.title, xlabel, bars)
		if err != nil {
			return fmt.Errorf("%s plot: %w", spec.metric, err)
		}
		src, err := svgURI(p, barW, h)
		if err != nil {
			return fmt.Errorf("%s plot: %w", spec.metric, err)
		}
		v.Bars = append(v.Bars, figure{
			Kind:    spec.kind,
			Class:   "bar",
			Src:     src,
			Alt:     spec.title,
			Caption: fmt.Sprintf("%s (%s). The grey one is the baseline.", mt.Label, mt.Describe),
		})
	}
	return nil
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
			cell := &curve{Label: fmt.Sprintf("%s (%s values)", shorten(c.ID, maxBarLabel), count(ch.TotalCount())), XYs: percentileCurve(ch)}
			var base *curve
			caption := fmt.Sprintf("%s latency percentiles of %s", class, c.ID)
			if !alone {
				if bh := has(baseID, class); bh != nil {
					base = &curve{Label: fmt.Sprintf("%s (%s values)", shorten(baseID, maxBarLabel), count(bh.TotalCount())), XYs: percentileCurve(bh)}
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
			sec.Figures = append(sec.Figures, figure{Kind: PlotLatency, Class: class, Src: src,
				Alt: fmt.Sprintf("%s latency percentile distribution of %s", class, c.ID), Caption: caption})
		}
		if len(sec.Figures) == 0 {
			sec.Missing = "No data or control latencies were recorded for this cell."
		}
		v.Latency = append(v.Latency, sec)
	}
	return nil
}

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
		mt, ok := results.MetricByName(r.Name)
		if !ok {
			mt = results.Metric{Name: r.Name, Label: r.Name}
		}
		row := metricRow{Label: mt.Label, Name: mt.Name, Unit: mt.Unit, Describe: mt.Describe, N: strconv.Itoa(r.N)}
		if r.N > 0 {
			row.Median = num(r.Median)
			row.Range = num(r.Min) + "–" + num(r.Max)
		}
		if c.Factor != "" {
			row.Compared = true
			if r.BaselineN > 0 {
				row.Base = num(r.BaselineMedian)
			}
			if r.Pairs > 0 && r.Ratio != 0 {
				row.Ratio = ratio(r.Ratio) + "×"
				row.RatioRange = ratio(r.RatioMin) + "–" + ratio(r.RatioMax)
			}
			row.Pairs = strconv.Itoa(r.Pairs)
			if r.P != 0 || r.PAdjusted != 0 {
				row.P = pval(r.P) + " / " + pval(r.PAdjusted)
			}
			row.Verdict, row.Class = string(r.Verdict), verdictClass(r.Verdict)
		}
		d.Metrics = append(d.Metrics, row)
	}
	for _, class := range slices.Sorted(maps.Keys(c.Latency)) {
		s := c.Latency[class]
		d.Latency = append(d.Latency, classRow{
			Class: class, Count: count(s.Count),
			P50: num(s.P50Us), P90: num(s.P90Us), P99: num(s.P99Us), P999: num(s.P999Us), P9999: num(s.P9999Us),
			Max: num(s.MaxUs), Mean: num(s.MeanUs), Clamped: count(s.Clamped),
		})
	}
	return d
}

// num prints a measured value with about three significant digits,
// grouping thousands.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case v == 0:
		return "0"
	case a >= 1000:
		return group(strconv.FormatFloat(v, 'f', 0, 64))
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// group puts thin spaces between groups of three digits of an integer.
func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune('\u2009')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func count(n int64) string { return group(strconv.FormatInt(n, 10)) }

func ratio(r float64) string { return strconv.FormatFloat(r, 'f', 3, 64) }

func pval(p float64) string { return strconv.FormatFloat(p, 'g', 2, 64) }

func withUnit(s, unit string) string {
	if unit == "" {
		return s
	}
	return s + "\u00a0" + unit
}
