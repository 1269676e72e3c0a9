package htmlreport

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/figure"
	"github.com/reactorlab/reactorlab/results/record"
)

// twoFormatsRun is a run directory as the matrix writes it, analysed by
// results.Analyze: a baseline without control probes (its control
// histogram is empty, as the load generator leaves it), a factor cell
// with them (so the baseline lacks the control metrics the cell has), and
// a factor cell without; the values are awkward to round (123,456.7,
// 99.95, 0.0012345, 1,234.5).
func twoFormatsRun(t *testing.T) (*results.Manifest, *results.Analysis, map[string]map[string]*hdrhistogram.Histogram) {
	t.Helper()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	base := map[string]string{"reactor": "lt", "hot": "4", "control_every": "0"}
	with := func(k, v string) map[string]string {
		c := map[string]string{}
		for kk, vv := range base {
			c[kk] = vv
		}
		c[k] = v
		return c
	}
	m := &results.Manifest{
		Format: results.ManifestFormat,
		Tool:   results.Tool{Version: "v0.1.0", Commit: "0123456789abcdef", Go: "go1.26.8"},
		Spec:   results.SpecInfo{Name: "formats", Source: "embedded:formats", Repeats: 6},
		Cells: []results.CellInfo{
			{ID: "baseline", Config: base},
			{ID: "control_every=10ms", Factor: "control_every", Value: "10ms", Config: with("control_every", "10ms")},
			{ID: "hot=8", Factor: "hot", Value: "8", Config: with("hot", "8")},
		},
		Shards: []results.ShardInfo{{Index: 1, Count: 1, Cells: []string{"control_every=10ms", "hot=8"}, Placement: "server=0,loadgen=1", Mode: "lab",
			Machine: results.Machine{Hostname: "lab1", CPUs: 2, OS: "linux", Arch: "amd64"}, Started: t0, Finished: t0.Add(time.Hour)}},
	}
	for r := 1; r <= 6; r++ {
		f := 1 + 0.002*float64(r-3)
		for _, pair := range []string{"control_every=10ms", "hot=8"} {
			for _, cell := range []string{"baseline", pair} {
				v := map[string]float64{
					results.MetricThroughput: 123456.7 * f,
					results.MetricDataP99:    99.95 * f,
					results.MetricServerCPU:  0.0012345 * f,
					results.MetricAnomalies:  0,
				}
				if cell == "hot=8" {
					v[results.MetricThroughput] *= 1.3
				}
				if cell == "control_every=10ms" {
					v[results.MetricControlP999] = 1234.5 * f
					v[results.MetricControlP50] = 0.98765 * f
				}
				seq := len(m.Runs) + 1
				m.Runs = append(m.Runs, results.RunRecord{Shard: 1, Seq: seq, Cell: cell, Repeat: r, Pair: pair,
					Dir: fmt.Sprintf("runs/%04d", seq), Started: t0, Mode: "lab", Valid: true, Metrics: v})
			}
		}
	}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	hist := func(n int, us float64) *hdrhistogram.Histogram {
		h := record.NewHistogram()
		for i := 0; i < n; i++ {
			if err := h.RecordValue(int64((us + float64(i%97)*1.337) * 1e3)); err != nil {
				t.Fatal(err)
			}
		}
		return h
	}
	hists := map[string]map[string]*hdrhistogram.Histogram{
		"baseline":           {"data": hist(123457, 87.65), "control": record.NewHistogram()},
		"control_every=10ms": {"data": hist(98765, 91.23), "control": hist(1234, 456.7)},
		"hot=8":              {"data": hist(150001, 80.01), "control": record.NewHistogram()},
	}
	return m, results.Analyze(m, hists), hists
}

var (
	mdCellHead = regexp.MustCompile("(?m)^### `([^`]*)`$")
	htmlH3     = regexp.MustCompile(`<h3><span class="id">([^<]*)</span></h3>`)
	htmlRow    = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	htmlTD     = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
)

// mdDetails returns, per cell and metric label (or "class " + class),
// the cells of the markdown detail tables' rows.
func mdDetails(md string) map[string]map[string][]string {
	out := map[string]map[string][]string{}
	cells := md[strings.Index(md, "## Cells\n"):]
	cells = cells[:strings.Index(cells, "## Metrics\n")]
	locs := mdCellHead.FindAllStringSubmatchIndex(cells, -1)
	for i, loc := range locs {
		id := cells[loc[2]:loc[3]]
		end := len(cells)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		rows := map[string][]string{}
		latency := false
		for _, line := range strings.Split(cells[loc[1]:end], "\n") {
			if strings.HasPrefix(line, "| class |") {
				latency = true
			}
			if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| metric |") || strings.HasPrefix(line, "| class |") {
				continue
			}
			f := strings.Split(strings.Trim(line, "|"), "|")
			for j := range f {
				f[j] = strings.TrimSpace(f[j])
			}
			if latency {
				rows["class "+f[0]] = f[1:]
			} else {
				rows[f[0]] = f[1:]
			}
		}
		out[id] = rows
	}
	return out
}

// htmlDetails is mdDetails for report.html's details section.
func htmlDetails(t *testing.T, doc string) map[string]map[string][]string {
	out := map[string]map[string][]string{}
	details := section(t, doc, "section", "details")
	locs := htmlH3.FindAllStringSubmatchIndex(details, -1)
	for i, loc := range locs {
		id := html.UnescapeString(details[loc[2]:loc[3]])
		end := len(details)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		rows := map[string][]string{}
		body := details[loc[1]:end]
		if i := strings.Index(body, "<details>"); i >= 0 {
			body = body[:i] // the configuration table
		}
		for _, r := range htmlRow.FindAllStringSubmatch(body, -1) {
			var f []string
			for _, td := range htmlTD.FindAllStringSubmatch(r[1], -1) {
				f = append(f, html.UnescapeString(strings.TrimPrefix(strings.TrimSuffix(td[1], "</code>"), "<code>")))
			}
			switch {
			case len(f) == 0: // the header
			case len(f) == 10 && strings.Contains(r[1], "<code>"):
				rows["class "+f[0]] = f[1:]
			default:
				rows[f[0]] = f[1:]
			}
		}
		out[id] = rows
	}
	return out
}

// TestMarkdownAndHTMLShowTheSameFigures renders one analysis both ways:
// every figure of every cell's detail rows (median, min–max, baseline
// median, ratio and range, p-values, what a comparison lacks) and of its
// latency classes reads the same in report.md and report.html; neither
// shows a class without samples as a row of zeros (both say which classes
// have none, in the same words), nor a bare "?".
func TestMarkdownAndHTMLShowTheSameFigures(t *testing.T) {
	m, a, hists := twoFormatsRun(t)
	var mdBuf, htmlBuf bytes.Buffer
	if err := results.WriteMarkdown(&mdBuf, m, a); err != nil {
		t.Fatal(err)
	}
	if err := Write(&htmlBuf, m, a, hists); err != nil {
		t.Fatal(err)
	}
	md, doc := mdBuf.String(), htmlBuf.String()
	mdD, htmlD := mdDetails(md), htmlDetails(t, doc)

	compared := 0
	for _, c := range a.Cells {
		mdRows, htmlRows := mdD[c.ID], htmlD[c.ID]
		if len(mdRows) == 0 || len(mdRows) != len(htmlRows) {
			t.Errorf("%s: %d markdown detail rows, %d html", c.ID, len(mdRows), len(htmlRows))
		}
		for _, mr := range c.Metrics {
			mt, _ := results.MetricByName(mr.Name)
			// markdown: unit, n, median, min–max[, base, ratio [range], p, p adj, verdict]
			// html:     unit, n, median, min–max[, base, ratio, ratio range, pairs, p / p adj, verdict]
			mdR, htR := mdRows[mt.Label], htmlRows[mt.Label]
			if len(mdR) < 4 || len(htR) < 4 {
				t.Errorf("%s %s: rows %q and %q", c.ID, mt.Label, mdR, htR)
				continue
			}
			if want := figure.Value(mr.Median); mdR[2] != want || htR[2] != want {
				t.Errorf("%s %s median: markdown %q, html %q, want %q", c.ID, mt.Label, mdR[2], htR[2], want)
			}
			if want := figure.Range(mr.Min, mr.Max); mdR[3] != want || htR[3] != want {
				t.Errorf("%s %s range: markdown %q, html %q, want %q", c.ID, mt.Label, mdR[3], htR[3], want)
			}
			if c.Factor == "" {
				continue
			}
			if len(mdR) != 9 || len(htR) != 10 {
				t.Errorf("%s %s: rows %q and %q", c.ID, mt.Label, mdR, htR)
				continue
			}
			htmlRatio := htR[5]
			if htR[6] != figure.NotAvailable {
				htmlRatio += " [" + htR[6] + "]"
			}
			if mdR[4] != htR[4] || mdR[5] != htmlRatio || mdR[6]+" / "+mdR[7] != htR[8] && mdR[6] != figure.NotAvailable {
				t.Errorf("%s %s: markdown base %q ratio %q p %q/%q; html base %q ratio %q p %q", c.ID, mt.Label, mdR[4], mdR[5], mdR[6], mdR[7], htR[4], htmlRatio, htR[8])
			}
			if gap := mr.Gap(mt.Label); gap != "" {
				if mdR[8] != gap || htR[9] != gap {
					t.Errorf("%s %s: verdict markdown %q, html %q, want %q", c.ID, mt.Label, mdR[8], htR[9], gap)
				}
			} else {
				compared++
				if gap := mr.RatioGap(); gap != "" {
					if mdR[5] != gap {
						t.Errorf("%s %s: ratio %q, want %q", c.ID, mt.Label, mdR[5], gap)
					}
				} else if want := figure.Ratio(mr.Ratio); !strings.HasPrefix(mdR[5], want+" [") {
					t.Errorf("%s %s: ratio %q, want %s", c.ID, mt.Label, mdR[5], want)
				}
			}
		}
		for class, s := range c.Latency {
			mdR, htR := mdRows["class "+class], htmlRows["class "+class]
			if s.Count == 0 {
				if mdR != nil || htR != nil {
					t.Errorf("%s: class %s without samples has rows %q, %q", c.ID, class, mdR, htR)
				}
				continue
			}
			// markdown: count, p50, p90, p99, p99.9, max; html: count, p50, p90, p99, p99.9, p99.99, max, mean, clamped
			if len(mdR) != 6 || len(htR) != 9 {
				t.Errorf("%s class %s: rows %q and %q", c.ID, class, mdR, htR)
				continue
			}
			want := []string{figure.Count(s.Count), s.Cell("p50", s.P50Us), s.Cell("p90", s.P90Us),
				s.Cell("p99", s.P99Us), s.Cell("p99.9", s.P999Us), figure.Value(s.MaxUs)}
			got := append(append([]string{}, htR[:5]...), htR[6])
			if strings.Join(mdR, "|") != strings.Join(want, "|") || strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("%s class %s: markdown %q, html %q, want %q", c.ID, class, mdR, got, want)
			}
		}
	}
	if compared == 0 {
		t.Errorf("no metric was compared: the fixture does not test ratios")
	}

	// The fixture's awkward figures, as both must show them.
	for _, want := range []string{"123,000", "×1.30", "no ratio: the baseline's median is 0", "100", "0.00123", "1,230", "0.989", "123,457",
		"n/a: baseline has no control p99.9 samples", "n/a: baseline has no control p50 samples",
		"No samples in the valid runs' measured periods: control."} {
		if !strings.Contains(md, want) || !strings.Contains(html.UnescapeString(doc), want) {
			t.Errorf("%q: in markdown %v, in html %v", want, strings.Contains(md, want), strings.Contains(html.UnescapeString(doc), want))
		}
	}
	if n := strings.Count(md, "measured periods: control."); n != 2 {
		t.Errorf("markdown names the empty control class %d times, want 2 (baseline, hot=8)", n)
	}
	if n := strings.Count(html.UnescapeString(doc), "measured periods: control."); n != 2 {
		t.Errorf("html names the empty control class %d times, want 2 (baseline, hot=8)", n)
	}
	// No bare "?": the inconclusive mark has its word.
	for _, line := range strings.Split(strings.ReplaceAll(md, "? inconclusive", ""), "\n") {
		if strings.HasPrefix(line, "|") && strings.Contains(line, "?") {
			t.Errorf("markdown row with a bare ?: %s", line)
		}
	}
	if strings.Contains(doc, ">?<") {
		t.Errorf("html has a bare ?")
	}
	// The summary tables have the same columns: the headline metrics some
	// cell has.
	if !strings.Contains(md, "| cell | valid runs | throughput (frames/s) | data p99 (µs) | control p99.9 (µs) | server CPU (CPU-s/Mframe) |") {
		t.Errorf("markdown summary header:\n%s", md)
	}
	var heads []string
	for _, h := range thRe.FindAllStringSubmatch(section(t, doc, "table", "summary-table"), -1) {
		heads = append(heads, strings.TrimSpace(h[1]))
	}
	if got := strings.Join(heads, ","); got != "cell,valid runs,throughput,data p99,control p99.9,server CPU" {
		t.Errorf("html summary header %s", got)
	}
	if t.Failed() {
		t.Logf("markdown:\n%s", md)
	}
}
