package htmlreport

import (
	"bytes"
	"encoding/base64"
	"html/template"
	"image/color"
	"math"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/results/stats"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Every plot is drawn by gonum/plot as SVG and embedded as a data URI, so
// the report needs no network and no file beside it, and a browser can
// tell whether each image loaded (img.complete, naturalWidth).

var (
	// sans is the plots' typeface. Liberation Sans is metric-compatible
	// with Arial, so text laid out with its metrics fits where the viewer
	// has either.
	sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

	colorCell     = color.RGBA{R: 0x1f, G: 0x63, B: 0xb4, A: 0xff} // blue
	colorBaseline = color.RGBA{R: 0x80, G: 0x80, B: 0x80, A: 0xff} // grey
	colorBarCell  = color.RGBA{R: 0x6b, G: 0x9b, B: 0xd6, A: 0xff}
	colorBarBase  = color.RGBA{R: 0xbd, G: 0xbd, B: 0xbd, A: 0xff}
	colorGrid     = color.Gray{Y: 0xdd}
)

// newPlot returns a plot with the report's fonts and sizes.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sans, 12)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 10)
		a.Tick.Label.Font = font.From(sans, 9)
	}
	p.Legend.TextStyle.Font = font.From(sans, 10)
	return p
}

// svgURI renders p as SVG of the given size and returns it as a data URI.
func svgURI(p *plot.Plot, w, h vg.Length) (template.URL, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return "", err
	}
	// The URI is built here from bytes this package drew: it is safe.
	return template.URL("data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString(b.Bytes())), nil
}

// A curve is a latency percentile distribution: x is 1/(1−q) for the
// quantile q (1 at the minimum, 100 at p99), y the latency in µs.
type curve struct {
	Label string
	XYs   plotter.XYs
	// Intervals are the 95% confidence intervals of the summary's
	// percentiles that the samples bound, drawn as bars on the curve (the
	// report's latency table, which has them all, says so).
	Intervals intervalBars
}

// intervalBars are percentiles' confidence intervals on the percentile
// plot's axes: x = 1/(1−q), y the point, Lo and Hi its distance to the
// interval's bounds (µs).
type intervalBars []struct{ X, Y, Lo, Hi float64 }

func (b intervalBars) Len() int                        { return len(b) }
func (b intervalBars) XY(i int) (float64, float64)     { return b[i].X, b[i].Y }
func (b intervalBars) YError(i int) (float64, float64) { return b[i].Lo, b[i].Hi }

// percentileIntervals are h's summary percentiles (record.SummaryPercentiles)
// with their confidence intervals, those that h's count bounds.
func percentileIntervals(h *hdrhistogram.Histogram) intervalBars {
	var out intervalBars
	for _, sp := range record.SummaryPercentiles {
		iv := stats.PercentileInterval(h, sp.P)
		if iv.TooFew {
			continue
		}
		y := latencyUs(h.ValueAtQuantile(sp.P))
		lo, hi := math.Max(iv.LoUs, minLatencyUs), math.Max(iv.HiUs, minLatencyUs)
		out = append(out, struct{ X, Y, Lo, Hi float64 }{1 / (1 - sp.P/100), y, math.Max(0, y-lo), math.Max(0, hi-y)})
	}
	return out
}

// stepsPerDecade is how many points the curve has per factor of ten of
// 1/(1−q).
const stepsPerDecade = 40

// minLatencyUs keeps a log axis defined for a recorded zero.
const minLatencyUs = 1e-3

// percentileCurve reads h (nanoseconds) at quantiles dense on the log
// percentile axis, from the minimum to the maximum, which it puts at
// x = count (the quantile 1 − 1/count: the last value of count values).
func percentileCurve(h *hdrhistogram.Histogram) plotter.XYs {
	n := h.TotalCount()
	if n == 0 {
		return nil
	}
	xmax := math.Max(float64(n), 2)
	var xys plotter.XYs
	for k := 0; ; k++ {
		x := math.Pow(10, float64(k)/stepsPerDecade)
		if x >= xmax {
			break
		}
		q := 100 * (1 - 1/x)
		xys = append(xys, plotter.XY{X: x, Y: latencyUs(h.ValueAtQuantile(q))})
	}
	return append(xys, plotter.XY{X: xmax, Y: latencyUs(h.Max())})
}

func latencyUs(ns int64) float64 { return math.Max(float64(ns)/1e3, minLatencyUs) }

// percentileTicks label the log percentile axis.
var percentileTicks = []plot.Tick{
	{Value: 2, Label: "50%"},
	{Value: 10, Label: "90%"},
	{Value: 100, Label: "99%"},
	{Value: 1e3, Label: "99.9%"},
	{Value: 1e4, Label: "99.99%"},
	{Value: 1e5, Label: "99.999%"},
	{Value: 1e6, Label: "99.9999%"},
	{Value: 1e7, Label: "99.99999%"},
	{Value: 1e8, Label: "99.999999%"},
}

// latencyPlot draws curves (the first is the cell's, drawn last, on top;
// the others grey and dashed) on log axes.
func latencyPlot(title string, cell *curve, base *curve) (*plot.Plot, error) {
	p := newPlot(title, "percentile", "latency")
	p.X.Scale = plot.LogScale{}
	p.Y.Scale = plot.LogScale{}

	xmax, ymin, ymax := 2.0, math.Inf(1), math.Inf(-1)
	for _, c := range []*curve{cell, base} {
		if c == nil {
			continue
		}
		for _, xy := range c.XYs {
			xmax = math.Max(xmax, xy.X)
			ymin = math.Min(ymin, xy.Y)
			ymax = math.Max(ymax, xy.Y)
		}
	}
	p.X.Min, p.X.Max = 1, xmax
	var xt []plot.Tick
	for _, t := range percentileTicks {
		if t.Value <= xmax {
			xt = append(xt, t)
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(xt)

	yt, lo, hi := latencyTicks(ymin, ymax)
	p.Y.Min, p.Y.Max = lo, hi
	p.Y.Tick.Marker = plot.ConstantTicks(yt)

	grid := plotter.NewGrid()
	grid.Vertical.Color, grid.Horizontal.Color = colorGrid, colorGrid
	p.Add(grid)

	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(6), vg.Points(-4)
	if base != nil {
		l, err := plotter.NewLine(base.XYs)
		if err != nil {
			return nil, err
		}
		l.Color = colorBaseline
		l.Width = vg.Points(1.5)
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(base.Label, l)
	}
	if cell != nil {
		l, err := plotter.NewLine(cell.XYs)
		if err != nil {
			return nil, err
		}
		l.Color = colorCell
		l.Width = vg.Points(1.8)
		p.Add(l)
		p.Legend.Add(cell.Label, l)
		if len(cell.Intervals) > 0 {
			bars, err := plotter.NewYErrorBars(cell.Intervals)
			if err != nil {
				return nil, err
			}
			bars.Color = colorCell
			bars.Width = vg.Points(1.2)
			bars.CapWidth = vg.Points(6)
			p.Add(bars)
		}
	}
	return p, nil
}

// latencyTicks returns ticks for a log latency axis (values in µs) and
// the axis range, widened to labelled ticks so that every plot has
// labels at both ends: decades only over a wide range, 1-2-5 over a
// narrow one.
func latencyTicks(min, max float64) (ticks []plot.Tick, lo, hi float64) {
	if !(min > 0) || math.IsInf(min, 0) {
		min = 1
	}
	if max < min {
		max = min
	}
	d0 := math.Floor(math.Log10(min))
	d1 := math.Ceil(math.Log10(max))
	if d1 <= d0 {
		d1 = d0 + 1
	}
	labelled := []float64{1}
	if math.Log10(max/min) <= 2.2 {
		labelled = []float64{1, 2, 5}
	}
	lo, hi = math.Pow(10, d0), math.Pow(10, d1)
	// Tighten the range to the labelled ticks around the data.
	for d := d0; d < d1; d++ {
		for _, m := range labelled {
			v := m * math.Pow(10, d)
			if v <= min*(1+1e-9) {
				lo = v
			}
		}
	}
	for d := d1; d > d0-1; d-- {
		for i := len(labelled) - 1; i >= 0; i-- {
			v := labelled[i] * math.Pow(10, d)
			if v >= max*(1-1e-9) {
				hi = v
			}
		}
	}
	for d := d0; d <= d1; d++ {
		for m := 1; m < 10; m++ {
			v := float64(m) * math.Pow(10, d)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			for _, l := range labelled {
				if float64(m) == l {
					t.Label = formatDuration(v)
				}
			}
			ticks = append(ticks, t)
		}
	}
	return ticks, lo, hi
}

// formatDuration prints a latency given in µs with the unit that keeps
// the number short: "500 ns", "20 µs", "1 ms", "2 s".
func formatDuration(us float64) string {
	g := func(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'g', -1, 64) }
	switch {
	case us >= 1e6:
		return g(us/1e6) + " s"
	case us >= 1e3:
		return g(us/1e3) + " ms"
	case us >= 1:
		return g(us) + " µs"
	default:
		return g(us*1e3) + " ns"
	}
}

// A bar is one cell's value in a bar plot: the median across its valid
// runs, with the range.
type bar struct {
	Label         string
	Median        float64
	Min, Max      float64
	Baseline      bool
	MissingReason string
}

// maxBarLabel is the most runes of a cell ID a bar plot prints; the
// tables have the whole ID.
const maxBarLabel = 40

// logSpread is the ratio of the largest to the smallest median above
// which barPlot draws on a log scale: bars from 0 would hide every value
// two orders of magnitude below the largest (prio's control latency
// beside flat dispatch's).
const logSpread = 30

// useLog reports whether bars span more than logSpread, all positive.
func useLog(bars []bar) bool {
	lo, hi := math.Inf(1), 0.0
	for _, b := range bars {
		if !(b.Min > 0) || !(b.Median > 0) {
			return false
		}
		lo, hi = math.Min(lo, b.Median), math.Max(hi, b.Median)
	}
	return hi/lo > logSpread
}

// barPlot draws horizontal bars, the first at the top, with whiskers from
// min to max; baseline bars are grey, the others blue. When the medians
// span more than logSpread it draws dots on a log scale instead (a bar
// has no length on a log axis), and says so in the axis label.
func barPlot(title, xlabel string, bars []bar) (*plot.Plot, vg.Length, error) {
	if useLog(bars) {
		return dotPlot(title, xlabel+" (log scale)", bars)
	}
	p := newPlot(title, xlabel, "")
	n := len(bars)
	names := make([]string, n)
	var base, cells plotter.Values
	var baseAt, cellsAt []float64
	var whiskers errPoints
	for i, b := range bars {
		y := float64(n - 1 - i) // the first bar at the top
		names[n-1-i] = shorten(b.Label, maxBarLabel)
		if b.Baseline {
			base = append(base, b.Median)
			baseAt = append(baseAt, y)
		} else {
			cells = append(cells, b.Median)
			cellsAt = append(cellsAt, y)
		}
		whiskers = append(whiskers, errPoint{X: b.Median, Y: y, Lo: b.Median - b.Min, Hi: b.Max - b.Median})
	}
	const rowH = 26 // points per bar
	width := vg.Points(rowH * 0.6)
	// A bar chart places its bars at consecutive positions from XMin, so
	// draw each bar as a chart of one, where it belongs.
	add := func(vs plotter.Values, at []float64, c color.Color) error {
		for i, v := range vs {
			bc, err := plotter.NewBarChart(plotter.Values{v}, width)
			if err != nil {
				return err
			}
			bc.Horizontal = true
			bc.XMin = at[i]
			bc.Color = c
			bc.LineStyle.Width = vg.Points(0.5)
			bc.LineStyle.Color = color.Gray{Y: 0x55}
			p.Add(bc)
		}
		return nil
	}
	grid := plotter.NewGrid()
	grid.Horizontal.Width = 0
	grid.Vertical.Color = colorGrid
	p.Add(grid)
	if err := add(base, baseAt, colorBarBase); err != nil {
		return nil, 0, err
	}
	if err := add(cells, cellsAt, colorBarCell); err != nil {
		return nil, 0, err
	}
	eb, err := plotter.NewXErrorBars(whiskers)
	if err != nil {
		return nil, 0, err
	}
	eb.LineStyle.Width = vg.Points(1.2)
	eb.CapWidth = width * 0.7
	p.Add(eb)
	p.NominalY(names...)
	p.X.Min = 0
	p.X.Tick.Marker = humanTicks{}
	h := vg.Points(float64(70 + rowH*n))
	return p, h, nil
}

// dotPlot is barPlot on a log scale: a dot at each median, whiskers from
// min to max.
func dotPlot(title, xlabel string, bars []bar) (*plot.Plot, vg.Length, error) {
	p := newPlot(title, xlabel, "")
	n := len(bars)
	names := make([]string, n)
	var base, cells plotter.XYs
	var whiskers errPoints
	lo, hi := math.Inf(1), 0.0
	for i, b := range bars {
		y := float64(n - 1 - i) // the first at the top
		names[n-1-i] = shorten(b.Label, maxBarLabel)
		if b.Baseline {
			base = append(base, plotter.XY{X: b.Median, Y: y})
		} else {
			cells = append(cells, plotter.XY{X: b.Median, Y: y})
		}
		whiskers = append(whiskers, errPoint{X: b.Median, Y: y, Lo: b.Median - b.Min, Hi: b.Max - b.Median})
		lo, hi = math.Min(lo, b.Min), math.Max(hi, b.Max)
	}
	const rowH = 26 // points per row
	grid := plotter.NewGrid()
	grid.Horizontal.Width = 0
	grid.Vertical.Color = colorGrid
	p.Add(grid)
	eb, err := plotter.NewXErrorBars(whiskers)
	if err != nil {
		return nil, 0, err
	}
	eb.LineStyle.Width = vg.Points(1.2)
	eb.CapWidth = vg.Points(rowH * 0.4)
	p.Add(eb)
	for _, set := range []struct {
		xys plotter.XYs
		c   color.Color
	}{{base, colorBarBase}, {cells, colorBarCell}} {
		if len(set.xys) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(set.xys)
		if err != nil {
			return nil, 0, err
		}
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		sc.GlyphStyle.Radius = vg.Points(5)
		sc.GlyphStyle.Color = set.c
		p.Add(sc)
	}
	p.NominalY(names...)
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = lo/1.5, hi*1.5
	p.X.Tick.Marker = humanLogTicks{}
	h := vg.Points(float64(70 + rowH*n))
	return p, h, nil
}

// humanLogTicks are log ticks (1, 2, 5 per decade) with short labels.
type humanLogTicks struct{}

func (humanLogTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	for d := math.Floor(math.Log10(min)); d <= math.Ceil(math.Log10(max)); d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if m != 2 || math.Log10(max/min) < 3 {
				t.Label = humanNumber(v)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// errPoint is a bar's whisker: Lo below and Hi above X.
type errPoint struct{ X, Y, Lo, Hi float64 }

type errPoints []errPoint

func (e errPoints) Len() int                        { return len(e) }
func (e errPoints) XY(i int) (float64, float64)     { return e[i].X, e[i].Y }
func (e errPoints) XError(i int) (float64, float64) { return e[i].Lo, e[i].Hi }

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// humanTicks are the default ticks with short labels: 1.5k, 200k, 3M.
type humanTicks struct{}

func (humanTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = humanNumber(ts[i].Value)
		}
	}
	return ts
}

// humanNumber prints v with at most 3 significant digits and a k, M or G
// suffix.
func humanNumber(v float64) string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return g(v/1e9) + "G"
	case a >= 1e6:
		return g(v/1e6) + "M"
	case a >= 1e3:
		return g(v/1e3) + "k"
	default:
		return g(v)
	}
}
