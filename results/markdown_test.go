package results_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/results"
)

// TestWriteMarkdownStructure: the report has the title, the header with the
// machine, the method, a summary row per cell with the headline columns and
// verdict marks, a detail section per cell, the notes and the glossary; every
// table row has its header's number of columns.
func TestWriteMarkdownStructure(t *testing.T) {
	scale := map[string]map[string]float64{"hot=16": {results.MetricThroughput: 1.5, results.MetricDataP99: 1.4}}
	m := synthManifest("md|spec", 6, []synthCell{{"hot", "16"}, {"reactor", "et"}, {"budgets", "budget-input=8"}}, noisy(11, typicalMeans, 0.03, scale))
	m.Runs[1].Valid, m.Runs[1].Invalid = false, []string{"a | pipe in the reason"}
	a := results.Analyze(m, nil)
	var buf bytes.Buffer
	if err := results.WriteMarkdown(&buf, m, a); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"# reactorlab: md|spec\n",
		"kernel 6.12.0 #1 SMP", "Test CPU @ 3.0GHz × 8 CPUs", "placement server=0,loadgen=1", "(1h0m0s)",
		"## Method\n", "Mann–Whitney",
		"## Summary\n", "| cell | valid runs | throughput (frames/s) | data p99 (µs) | control p99.9 (µs) | server CPU (CPU-s/Mframe) |",
		"▲ better", "▼ worse",
		"### `baseline`", "### `hot=16`", "### `reactor=et`", "### `budgets=budget-input=8`",
		"## Notes\n", "## Metrics\n", "**throughput** (`throughput` (frames/s))",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	for _, c := range m.Cells {
		if !strings.Contains(out, "| `"+c.ID+"` |") {
			t.Errorf("no summary row for %s", c.ID)
		}
	}
	checkTables(t, out)
	if t.Failed() {
		t.Log(out)
	}
}

// checkTables checks that every row of every markdown table has as many
// cells as the table's header (escaped pipes do not split).
func checkTables(t *testing.T, md string) {
	t.Helper()
	cols := -1
	for i, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = -1
			continue
		}
		n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
		if cols < 0 {
			cols = n
		} else if n != cols {
			t.Errorf("line %d has %d pipes, its table %d: %s", i+1, n, cols, line)
		}
	}
}

// TestFormatValue: 3 significant figures, thousands separators, no
// exponent, a dash for NaN.
func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 1: "1.00", 18.54: "18.5", 999.7: "1,000", 252_345: "252,000", 1_234_567: "1,230,000",
		0.001234: "0.00123", -4567: "-4,570", 0.5: "0.500", math.NaN(): "–", math.Inf(1): "–",
	} {
		if got := results.FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %q, want %q", v, got, want)
		}
	}
}
