package results

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/results/figure"
	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/results/stats"
)

// WriteMarkdown writes the report of a run directory as GitHub markdown: a
// title with the spec's name; the tool, Go and each shard's machine, time
// and runs; the method; a summary table with a row per cell and a column
// per headline metric (HeadlineMetrics), each factor cell's entry showing
// its median, its ratio to the baseline with the pairs' range and the
// verdict; a detail table per cell with every metric that has samples and
// its latency classes that have samples; the notes; and a glossary of the
// metrics that appear. Figures are formatted as report.html formats them
// (figure.Value, figure.Ratio, figure.Range, figure.PValue, figure.Count). Nothing
// is shown as a row of zeros or a bare mark: a class or metric without
// samples is named as such (NoSamples, NoSamplesNote, NoMetricSamples),
// and a comparison that cannot be made says what it lacks
// (MetricResult.Gap, RatioGap). It returns the first write error.
func WriteMarkdown(w io.Writer, m *Manifest, a *Analysis) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	p("# reactorlab: %s\n\n", mdText(a.Spec))
	writeHeader(p, m)
	p("## Method\n\n%s\n\n", mdText(a.Method))

	present := presentMetrics(a)
	headline := HeadlineMetrics(a)
	p("## Summary\n\n")
	p("Each factor cell shows its median, its ratio to the baseline (×, the footnote says which ratio; range in brackets) and the verdict: " +
		"▲ better, ▼ worse, ◆ different (a metric without a direction), = no significant difference, " +
		"? inconclusive (too few valid runs for any difference to be significant); " +
		"n/a says what the cell or the baseline lacks for a comparison.\n\n")
	// The limit column only where runs say which side limited them
	// (reports of runs recorded before it stay as they were).
	limits := slices.ContainsFunc(a.Cells, func(c CellAnalysis) bool { return len(c.Limits) > 0 })
	p("| cell | valid runs |")
	if limits {
		p(" limit |")
	}
	for _, metric := range headline {
		p(" %s |", mdCell(metric.Label+unitSuffix(metric.Unit)))
	}
	p("\n|---|---:|")
	if limits {
		p("---|")
	}
	for range headline {
		p("---:|")
	}
	p("\n")
	for _, c := range a.Cells {
		p("| %s | %d/%d |", mdCode(c.ID), c.ValidRuns, c.Runs)
		if limits {
			p(" %s |", mdCell(orDash(c.LimitText())))
		}
		for _, metric := range headline {
			p(" %s |", mdCell(summaryText(c, metric)))
		}
		p("\n")
	}
	p("\n%s\n\n", RatioFootnote)

	p("## Cells\n\n")
	for _, c := range a.Cells {
		p("### %s\n\n", mdCode(c.ID))
		if c.Describe != "" {
			p("%s\n\n", mdText(c.Describe))
		}
		p("%d of %d runs valid.", c.ValidRuns, c.Runs)
		if l := c.LimitText(); l != "" {
			p(" The limit (the load generator's self-check, and whether a side's CPUs were %.0f%% busy or more): %s.", 100*stats.BusyFull, mdText(l))
		}
		p("\n\n")
		for _, why := range c.Invalid {
			p("- invalid: %s\n", mdText(why))
		}
		for _, why := range c.Contended {
			p("- CONTENDED, left out: %s\n", mdText(why))
		}
		for _, why := range c.Flagged {
			p("- FLAGGED (a gate of the load generator's self-check failed): %s\n", mdText(why))
		}
		if len(c.Invalid)+len(c.Contended)+len(c.Flagged) > 0 {
			p("\n")
		}
		writeCellTable(p, c)
		writeLatencyTable(p, c.Latency)
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
	p("- spec: %s from %s, %s, %s\n", mdText(m.Spec.Name), mdText(m.Spec.Source), figure.Counted(m.Spec.Repeats, "repeat", "repeats"), figure.Counted(len(m.Cells), "cell", "cells"))
	for _, s := range m.Shards {
		mc := s.Machine
		p("- shard %d/%d: %s, kernel %s, %s × %d CPUs (%s/%s); placement %s, mode %s; %s to %s (%s); %s",
			s.Index, s.Count, mdText(orDash(mc.Hostname)), mdText(orDash(mc.Kernel)), mdText(orDash(mc.CPUModel)), mc.CPUs,
			mdText(mc.OS), mdText(mc.Arch), mdText(orDash(s.Placement)), mdText(orDash(s.Mode)),
			s.Started.UTC().Format(time.DateTime), s.Finished.UTC().Format(time.DateTime+" UTC"), wallTime(s.Started, s.Finished), m.ShardRuns(s.Index).Text())
		if s.Interrupted {
			p("; **interrupted**")
		}
		p("\n")
		writeResolved(p, s)
	}
	p("\n")
}

// writeResolved lists what shard s's placement and load generator loops
// resolved to, the baseline's and each cell's placed otherwise; nothing
// for a manifest that did not record them.
func writeResolved(p func(string, ...any), s ShardInfo) {
	if t := s.Resolved.Text(); t != "" {
		p("  - placed: %s\n", mdText(t))
	}
	for _, c := range s.CellPlacements {
		p("  - cell %s placed: %s\n", mdCode(c.Cell), mdText(c.Resolved.Text()))
	}
}

// RatioFootnote says, under a table that prints a cell's median beside
// its ratio to the baseline, which ratio that is: the median over the
// repeats of each repeat's cell run over the same repeat's baseline run
// (MetricResult.Ratio), which need not agree in direction with the
// medians printed beside it.
const RatioFootnote = "×: the median of the per-repeat ratios to the baseline (each repeat's cell run over the same repeat's baseline run), " +
	"not the ratio of the medians shown: the two can point different ways."

// summaryText is a cell's entry in the summary table for metric: the
// baseline's median; a factor cell's median, ratio and verdict, or what is
// missing for a comparison; NoSamples when the cell has no value of it.
func summaryText(c CellAnalysis, metric Metric) string {
	mr, ok := c.metric(metric.Name)
	if !ok || mr.N == 0 {
		return NoSamples
	}
	s := figure.Value(mr.Median)
	if c.Factor == "" {
		return s
	}
	if gap := mr.Gap(metric.Label); gap != "" {
		return s + " (" + gap + ")"
	}
	return s + " " + ratioText(mr) + " " + verdictMark(mr.Verdict)
}

// writeCellTable writes the cell's metrics that have samples, one row
// each, or NoMetricSamples when none has.
func writeCellTable(p func(string, ...any), c CellAnalysis) {
	var rows []MetricResult
	for _, mr := range c.Metrics {
		if mr.N > 0 {
			rows = append(rows, mr)
		}
	}
	if len(rows) == 0 {
		p("%s\n\n", NoMetricSamples)
		return
	}
	if c.Factor == "" {
		p("| metric | unit | n | median | min–max |\n|---|---|---:|---:|---:|\n")
	} else {
		p("| metric | unit | n | median | min–max | baseline median | median per-repeat ratio [range] | p | p adj | verdict |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	}
	for _, mr := range rows {
		metric, ok := MetricByName(mr.Name)
		if !ok {
			metric = Metric{Name: mr.Name, Label: mr.Name}
		}
		p("| %s | %s | %d | %s | %s |", mdCell(metric.Label), mdCell(metric.Unit), mr.N, figure.Value(mr.Median), figure.Range(mr.Min, mr.Max))
		if c.Factor != "" {
			base, ratio, pv, padj, verdict := figure.NotAvailable, figure.NotAvailable, figure.NotAvailable, figure.NotAvailable, verdictMark(mr.Verdict)
			if gap := mr.Gap(metric.Label); gap != "" {
				verdict = gap
			} else {
				base, ratio = figure.Value(mr.BaselineMedian), ratioText(mr)
				pv, padj = figure.PValue(mr.P), figure.PValue(mr.PAdjusted)
				if note := mr.IntervalNote(); note != "" {
					verdict += "; " + note
				}
			}
			p(" %s | %s | %s | %s | %s |", base, mdCell(ratio), pv, padj, mdCell(verdict))
		}
		p("\n")
	}
	p("\n")
}

// writeLatencyTable writes a row per latency class with samples, and
// NoSamplesNote for the classes without: never a row of zeros.
func writeLatencyTable(p func(string, ...any), lat map[string]record.ClassSummary) {
	sampled, empty := LatencyClasses(lat)
	if len(sampled) > 0 {
		p("Merged latency of the valid runs' measured periods (µs; in brackets, each percentile's %.0f%% confidence interval from the order statistics):\n\n", 100*stats.Confidence)
		p("| class | count | p50 | p90 | p99 | p99.9 | max |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, class := range sampled {
			s := lat[class]
			p("| %s | %s | %s | %s | %s | %s | %s |\n", mdCell(class), figure.Count(s.Count),
				s.Cell("p50", s.P50Us), s.Cell("p90", s.P90Us), s.Cell("p99", s.P99Us), s.Cell("p99.9", s.P999Us), figure.Value(s.MaxUs))
		}
		p("\n")
	}
	if note := NoSamplesNote(empty); note != "" {
		p("%s\n\n", mdText(note))
	}
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

// ratioText is "×1.05 [1.01–1.09]", or RatioGap's words without a pair.
func ratioText(mr MetricResult) string {
	if gap := mr.RatioGap(); gap != "" {
		return gap
	}
	return figure.Ratio(mr.Ratio) + " [" + figure.Range(mr.RatioMin, mr.RatioMax) + "]"
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
		return "? inconclusive"
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
