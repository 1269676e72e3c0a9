package results

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/reactorlab/reactorlab/results/figure"
)

// WriteTable writes the comparison as an aligned text table (cell, metric,
// old and new medians, ratio, adjusted p, verdict, and REGRESSION where one
// is), then what was not compared, the failures and the notes, and as the
// last line the verdict (Comparison.Summary): "N regressions beyond ±X%"
// or "no significant regression beyond ±X%", with what was not compared,
// or "nothing compared: …".
func (c *Comparison) WriteTable(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "old: %s %s\nnew: %s %s\n\n", c.OldSpec, shortCommit(c.OldCommit), c.NewSpec, shortCommit(c.NewCommit))
	tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "cell\tmetric\told\tnew\tratio\tp adj\tverdict")
	for _, r := range c.Rows {
		m, _ := MetricByName(r.Metric)
		ratio, padj := "–", "–"
		if r.Ratio != 0 {
			ratio = "×" + figure.Value(r.Ratio)
		}
		if r.OldN > 0 && r.NewN > 0 {
			padj = figure.PValue(r.PAdjusted)
		}
		verdict := string(r.Verdict)
		if r.Regression {
			verdict += "  REGRESSION"
		}
		if r.Intervals != "" {
			_, label, _ := latencyPercentile(r.Metric)
			verdict += "  (merged " + label + " intervals " + r.Intervals + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Cell, m.Label,
			valueN(r.OldMedian, r.OldN, m.Unit), valueN(r.NewMedian, r.NewN, m.Unit), ratio, padj, verdict)
	}
	tw.Flush()
	if len(c.NotCompared) > 0 {
		fmt.Fprintf(ew, "\nnot compared:\n")
		for _, p := range c.NotCompared {
			fmt.Fprintf(ew, "  %s: %s\n", p.Cell, p.Reason)
		}
	}
	if len(c.Failures) > 0 {
		fmt.Fprintf(ew, "\n")
		for _, p := range c.Failures {
			fmt.Fprintf(ew, "REGRESSION %s: %s\n", p.Cell, p.Reason)
		}
	}
	if len(c.Notes) > 0 {
		fmt.Fprintf(ew, "\n")
		for _, n := range c.Notes {
			fmt.Fprintf(ew, "%s\n", n)
		}
	}
	fmt.Fprintf(ew, "\n%s\n", c.Summary())
	return ew.err
}

// Summary is the comparison's verdict in one line: "nothing compared: …"
// when no cell was; "nothing judged: …" when no cell regressed and the
// gate cannot fire in any compared cell (NothingJudged); else the
// regressions ("1 regression beyond ±10%", "no significant regression
// beyond ±10%"), followed by what was not compared ("; not compared: 2
// cells, 1 metric").
func (c *Comparison) Summary() string {
	if c.NothingCompared() {
		return fmt.Sprintf("nothing compared: none of the %d old and %d new cells is in both with the same configuration and values on both sides",
			c.cellsOn(OnlyOld), c.cellsOn(OnlyNew))
	}
	if c.NothingJudged() {
		return nothingJudgedText(c.CannotFire)
	}
	s := regressionsText(c.Regressions(), c.Threshold)
	if cells, metrics := c.NotComparedCounts(); cells+metrics > 0 {
		s += "; not compared: " + notComparedText(0, cells, metrics)
	}
	return s
}

// nothingJudgedText is the verdict when the gate cannot fire in any
// compared cell, the cells named.
func nothingJudgedText(cells []string) string {
	return fmt.Sprintf("nothing judged: the gate cannot fire in any compared cell (%s): too few valid runs a side for any change to be significant (the WARNING says how many are needed)",
		strings.Join(cells, ", "))
}

// cellsOn counts the cells of the old (OnlyOld) or new (OnlyNew) manifest:
// those on that side only, and those on both.
func (c *Comparison) cellsOn(side NotComparedReason) int {
	n := len(c.Compared)
	for _, nc := range c.NotCompared {
		if nc.Metric == "" && nc.Why != OnlyOld && nc.Why != OnlyNew || nc.Why == side {
			n++
		}
	}
	return n
}

// regressionsText is "no significant regression beyond ±10%", "1
// regression beyond ±10%" or "N regressions beyond ±10%".
func regressionsText(n int, threshold float64) string {
	pct := "0"
	if threshold > 0 {
		pct = strconv.FormatFloat(figure.RoundSignificant(threshold*100, 3), 'f', -1, 64)
	}
	switch n {
	case 0:
		return fmt.Sprintf("no significant regression beyond ±%s%%", pct)
	case 1:
		return fmt.Sprintf("1 regression beyond ±%s%%", pct)
	}
	return fmt.Sprintf("%d regressions beyond ±%s%%", n, pct)
}

// notComparedText is "1 spec, 2 cells, 1 metric" (zero counts left out).
func notComparedText(specs, cells, metrics int) string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{specs, "spec"}, {cells, "cell"}, {metrics, "metric"}} {
		switch {
		case p.n == 1:
			parts = append(parts, "1 "+p.what)
		case p.n > 1:
			parts = append(parts, fmt.Sprintf("%d %ss", p.n, p.what))
		}
	}
	return strings.Join(parts, ", ")
}

// noValuesText is NoValues' reason for a cell with oldValid and newValid
// valid runs.
func noValuesText(oldValid, newValid int, metrics []string) string {
	switch {
	case oldValid == 0 && newValid == 0:
		return "no valid run on either side"
	case oldValid == 0:
		return fmt.Sprintf("no valid old run (%d valid new runs)", newValid)
	}
	return fmt.Sprintf("no metric compared (%s) has values on both sides", strings.Join(metrics, ", "))
}

// valueN is "value unit (n=N)", or "– (n=0)".
func valueN(v float64, n int, unit string) string {
	if n == 0 {
		return "– (n=0)"
	}
	s := figure.Value(v)
	if unit != "" {
		s += " " + unit
	}
	return fmt.Sprintf("%s (n=%d)", s, n)
}

func shortCommit(c string) string {
	if c == "" {
		return "(commit unknown)"
	}
	if len(c) > 12 {
		c = c[:12]
	}
	return "commit " + c
}

// errWriter keeps the first write error and drops later writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	_, e.err = e.w.Write(p)
	return len(p), nil
}
