package results

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteMarkdown writes the report of a run directory as GitHub markdown: a
// title with the spec's name; the tool, Go and each shard's machine, time
// and runs; the method; a summary table with a row per cell and a column
// per headline (Gate) metric any cell has, each factor cell's entry
// showing its median, its ratio to the baseline with the pairs' range and
// the verdict; a detail table per cell with every metric; the notes; and a
// glossary of the metrics that appear. Numbers have 3 significant figures.
// It returns the first write error.
func WriteMarkdown(w io.Writer, m *Manifest, a *Analysis) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	p("# reactorlab: %s\n\n", mdText(a.Spec))
	writeHeader(p, m)
	p("## Method\n\n%s\n\n", mdText(a.Method))

	present := presentMetrics(a)
	var headline []Metric
	for _, metric := range Metrics {
		if metric.Gate && present[metric.Name] {
			headline = append(headline, metric)
		}
	}
	p("## Summary\n\n")
	p("Each factor cell shows its median, its ratio to the baseline (median over the pairs, range in brackets) and the verdict: " +
		"▲ better, ▼ worse, ◆ different (a metric without a direction), = no significant difference, ? inconclusive.\n\n")
	p("| cell | valid runs |")
	for _, metric := range headline {
		p(" %s |", mdCell(metric.Label+unitSuffix(metric.Unit)))
	}
	p("\n|---|---:|")
	for range headline {
		p("---:|")
	}
	p("\n")
	for _, c := range a.Cells {
		p("| %s | %d/%d |", mdCode(c.ID), c.ValidRuns, c.Runs)
		for _, metric := range headline {
			mr, ok := c.metric(metric.Name)
			if !ok {
				p(" – |")
				continue
			}
			s := FormatValue(mr.Median)
			if c.Factor != "" {
				s += " " + ratioText(mr) + " " + verdictMark(mr.Verdict)
			}
			p(" %s |", mdCell(s))
		}
		p("\n")
	}
	p("\n")

	p("## Cells\n\n")
	for _, c := range a.Cells {
		p("### %s\n\n", mdCode(c.ID))
		if c.Describe != "" {
			p("%s\n\n", mdText(c.Describe))
		}
		p("%d of %d runs valid.\n\n", c.ValidRuns, c.Runs)
		for _, why := range c.Invalid {
			p("- invalid: %s\n", mdText(why))
		}
		if len(c.Invalid) > 0 {
			p("\n")
		}
		if len(c.Metrics) > 0 {
			writeCellTable(p, c)
		}
		if len(c.Latency) > 0 {
			writeLatencyTable(p, c.Latency)
		}
	}

	if len(a.Notes) > 0 {
		p("## Notes\n\n")
		for _, n := range a.Notes {
			p("- %s\n", mdText(n))
		}
		p("\n")
	}

	p("## Metrics\n\n")
	for _, metric := range Metrics {
		if present[metric.Name] {
			p("- **%s** (%s%s): %s\n", mdText(metric.Label), mdCode(metric.Name), mdText(unitSuffix(metric.Unit)), mdText(metric.Describe))
		}
	}
	return bw.Flush()
}

func writeHeader(p func(string, ...any), m *Manifest) {
	commit := m.Tool.Commit
	if commit == "" {
		commit = "unknown commit"
	} else if len(commit) > 12 {
		commit = commit[:12]
	}
	if m.Tool.Modified {
		commit += " (modified)"
	}
	p("- tool: reactorlab %s, %s, %s\n", mdText(m.Tool.Version), mdText(commit), mdText(m.Tool.Go))
	p("- spec: %s from %s, %d repeats, %d cells\n", mdText(m.Spec.Name), mdText(m.Spec.Source), m.Spec.Repeats, len(m.Cells))
	for _, s := range m.Shards {
		valid, total := m.ShardRuns(s.Index)
		mc := s.Machine
		p("- shard %d/%d: %s, kernel %s, %s × %d CPUs (%s/%s); placement %s, mode %s; %s to %s (%s); %d/%d runs valid",
			s.Index, s.Count, mdText(orDash(mc.Hostname)), mdText(orDash(mc.Kernel)), mdText(orDash(mc.CPUModel)), mc.CPUs,
			mdText(mc.OS), mdText(mc.Arch), mdText(orDash(s.Placement)), mdText(orDash(s.Mode)),
			s.Started.UTC().Format(time.DateTime), s.Finished.UTC().Format(time.DateTime+" UTC"), wallTime(s.Started, s.Finished), valid, total)
		if s.Interrupted {
			p("; **interrupted**")
		}
		p("\n")
	}
	p("\n")
}

func writeCellTable(p func(string, ...any), c CellAnalysis) {
	if c.Factor == "" {
		p("| metric | unit | n | median | min–max |\n|---|---|---:|---:|---:|\n")
	} else {
		p("| metric | unit | n | median | min–max | baseline median | ratio [range] | p | p adj | verdict |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	}
	for _, mr := range c.Metrics {
		metric, _ := MetricByName(mr.Name)
		p("| %s | %s | %d | %s | %s–%s |", mdCell(metric.Label), mdCell(metric.Unit), mr.N, FormatValue(mr.Median), FormatValue(mr.Min), FormatValue(mr.Max))
		if c.Factor != "" {
			base, pv, padj := "–", "–", "–"
			if mr.BaselineN > 0 {
				base = FormatValue(mr.BaselineMedian)
				pv, padj = FormatP(mr.P), FormatP(mr.PAdjusted)
			}
			p(" %s | %s | %s | %s | %s |", base, mdCell(ratioText(mr)), pv, padj, mdCell(verdictMark(mr.Verdict)))
		}
		p("\n")
	}
	p("\n")
}

func writeLatencyTable(p func(string, ...any), lat map[string]ClassSummary) {
	classes := make([]string, 0, len(lat))
	for class := range lat {
		classes = append(classes, class)
	}
	slices.Sort(classes)
	p("Merged latency of the valid runs' measured periods (µs):\n\n")
	p("| class | count | p50 | p90 | p99 | p99.9 | max |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, class := range classes {
		s := lat[class]
		p("| %s | %s | %s | %s | %s | %s | %s |\n", mdCell(class), FormatValue(float64(s.Count)),
			FormatValue(s.P50Us), FormatValue(s.P90Us), FormatValue(s.P99Us), FormatValue(s.P999Us), FormatValue(s.MaxUs))
	}
	p("\n")
}

// metric returns the cell's result for the metric called name.
func (c CellAnalysis) metric(name string) (MetricResult, bool) {
	for _, mr := range c.Metrics {
		if mr.Name == name {
			return mr, true
		}
	}
	return MetricResult{}, false
}

func presentMetrics(a *Analysis) map[string]bool {
	out := map[string]bool{}
	for _, c := range a.Cells {
		for _, mr := range c.Metrics {
			out[mr.Name] = true
		}
	}
	return out
}

// ratioText is "×1.05 [1.01–1.09]", or "×–" without pairs.
func ratioText(mr MetricResult) string {
	if mr.Pairs == 0 {
		return "×–"
	}
	return fmt.Sprintf("×%s [%s–%s]", FormatValue(mr.Ratio), FormatValue(mr.RatioMin), FormatValue(mr.RatioMax))
}

func verdictMark(v Verdict) string {
	switch v {
	case VerdictBetter:
		return "▲ better"
	case VerdictWorse:
		return "▼ worse"
	case VerdictDifferent:
		return "◆ different"
	case VerdictSame:
		return "="
	case VerdictInconclusive:
		return "?"
	}
	return string(v)
}

func unitSuffix(unit string) string {
	if unit == "" {
		return ""
	}
	return " (" + unit + ")"
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func wallTime(from, to time.Time) string {
	if from.IsZero() || to.Before(from) {
		return "–"
	}
	return to.Sub(from).Round(time.Second).String()
}

// FormatValue formats v with 3 significant figures, without an exponent,
// with thousands separators from 1,000 up ("252,000", "18.5", "0.00123");
// "–" for NaN or an infinity.
func FormatValue(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	if v == 0 {
		return "0"
	}
	r := roundSignificant(v, 3)
	if math.Abs(r) >= 1000 {
		return groupThousands(strconv.FormatFloat(r, 'f', 0, 64))
	}
	decimals := max(0, 2-int(math.Floor(math.Log10(math.Abs(r)))))
	return strconv.FormatFloat(r, 'f', decimals, 64)
}

// FormatP formats a p-value with 2 significant figures ("0.036", "9.1e-05").
func FormatP(p float64) string {
	if math.IsNaN(p) {
		return "–"
	}
	return strconv.FormatFloat(p, 'g', 2, 64)
}

func roundSignificant(v float64, digits int) float64 {
	scale := math.Pow(10, float64(digits-1)-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*scale) / scale
}

// groupThousands puts commas into the integer digits string s ("-1234567"
// → "-1,234,567").
func groupThousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, d := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return sign + b.String()
}

// mdText makes s safe as running markdown text on one line: no line
// breaks, and no '<' that could open an HTML tag (one before a letter,
// '/', '!' or '?'); a '<' before a space or digit stays readable.
func mdText(s string) string {
	s = strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '<' && i+1 < len(s) && strings.ContainsRune("/!?abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", rune(s[i+1])) {
			b.WriteString("&lt;")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mdCell makes s safe inside a table cell.
func mdCell(s string) string { return strings.ReplaceAll(mdText(s), "|", `\|`) }

// mdCode is s as a code span that is safe in a table cell.
func mdCode(s string) string {
	s = strings.NewReplacer("\n", " ", "\r", " ", "|", `\|`).Replace(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
