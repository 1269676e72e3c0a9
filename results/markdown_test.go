package results_test

import (
	"bytes"
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

// TestWriteMarkdownSummaryMarks: a cell whose throughput is significantly
// higher and data p99 significantly higher shows "▲ better" in its
// throughput column and "▼ worse" in its data p99 column of the summary
// table; a cell like the baseline shows "=" and neither mark. (The legend
// above the table names every mark, so the marks must be looked for in
// the right row and column.)
func TestWriteMarkdownSummaryMarks(t *testing.T) {
	scale := map[string]map[string]float64{"hot=16": {results.MetricThroughput: 1.5, results.MetricDataP99: 1.4}}
	m := synthManifest("marks", 6, []synthCell{{"hot", "16"}, {"reactor", "et"}}, noisy(11, typicalMeans, 0.03, scale))
	a := results.Analyze(m, nil)
	for _, c := range []struct {
		cell, metric string
		want         results.Verdict
	}{
		{"hot=16", results.MetricThroughput, results.VerdictBetter},
		{"hot=16", results.MetricDataP99, results.VerdictWorse},
		{"reactor=et", results.MetricThroughput, results.VerdictSame},
		{"reactor=et", results.MetricDataP99, results.VerdictSame},
	} {
		if got := metricOf(t, a, c.cell, c.metric).Verdict; got != c.want {
			t.Fatalf("fixture: %s %s is %s, want %s", c.cell, c.metric, got, c.want)
		}
	}
	var buf bytes.Buffer
	if err := results.WriteMarkdown(&buf, m, a); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	summary := out[strings.Index(out, "## Summary\n"):]
	summary = summary[:strings.Index(summary, "## Cells\n")]
	split := func(line string) []string {
		f := strings.Split(line, "|")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		return f
	}
	var header []string
	rows := map[string][]string{}
	for _, line := range strings.Split(summary, "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		if header == nil {
			header = split(line)
			continue
		}
		f := split(line)
		rows[f[1]] = f
	}
	col := func(label string) int {
		for i, h := range header {
			if h == label {
				return i
			}
		}
		t.Fatalf("no column %q in %q", label, header)
		return 0
	}
	tp, p99 := col("throughput (frames/s)"), col("data p99 (µs)")
	for _, c := range []struct {
		cell, mark, not string
		col             int
	}{
		{"`hot=16`", "▲ better", "▼", tp},
		{"`hot=16`", "▼ worse", "▲", p99},
		{"`reactor=et`", " =", "▲", tp},
		{"`reactor=et`", " =", "▼", p99},
	} {
		row, ok := rows[c.cell]
		if !ok || len(row) != len(header) {
			t.Fatalf("no summary row for %s of %d columns: %q", c.cell, len(header), row)
		}
		if got := row[c.col]; !strings.HasSuffix(got, c.mark) || strings.Contains(got, c.not) {
			t.Errorf("%s, column %q: %q, want it to end with %q (and have no %q)", c.cell, header[c.col], got, c.mark, c.not)
		}
	}
	if t.Failed() {
		t.Log(summary)
	}
}

// driftingPairs is a throughput the median of whose cell runs (520) is
// above the baseline's (500) while the median of its per-repeat ratios
// (×0.950) is below 1: the figures a reader sees side by side point two
// ways unless the report says which ratio it prints.
func driftingPairs(cell string, repeat int, _ string) map[string]float64 {
	base := []float64{100, 600, 500}
	ratio := []float64{0.95, 550.0 / 600, 1.04}
	v := base[repeat-1]
	if cell != "baseline" {
		v *= ratio[repeat-1]
	}
	return map[string]float64{results.MetricThroughput: v}
}

// TestWriteMarkdownSaysWhichRatio: a cell whose median is above the
// baseline's and whose ratio is below 1 is printed with both, and the
// summary says, under its table, that the ratio is the median of the
// per-repeat ratios and not the ratio of the medians shown.
func TestWriteMarkdownSaysWhichRatio(t *testing.T) {
	m := synthManifest("drift", 3, []synthCell{{"hot", "16"}}, driftingPairs)
	a := results.Analyze(m, nil)
	var buf bytes.Buffer
	if err := results.WriteMarkdown(&buf, m, a); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	summary := out[strings.Index(out, "## Summary\n"):strings.Index(out, "## Cells\n")]
	if !strings.Contains(summary, "| `baseline` | 3/3 | 500 |") || !strings.Contains(summary, "| `hot=16` | 3/3 | 520 ×0.950 [") {
		t.Fatalf("the fixture does not print a median above the baseline's beside a ratio below 1:\n%s", summary)
	}
	table := summary[strings.Index(summary, "| cell |"):]
	after := table[strings.Index(table, "\n\n")+2:]
	if !strings.HasPrefix(after, "×: the median of the per-repeat ratios to the baseline (each repeat's cell run over the same repeat's baseline run), not the ratio of the medians shown") {
		t.Errorf("no footnote under the summary table says which ratio × is; after the table:\n%s", after)
	}
	if !strings.Contains(out, "| baseline median | median per-repeat ratio [range] |") {
		t.Errorf("the cell tables' ratio column does not say which ratio it is:\n%s", out)
	}
}

// TestWriteMarkdownWarnsTheGateCannotFire: with 3 repeats, a compare of
// this run with another like it could not fire in any cell; the report's
// notes say so in the words of compare's own warning, before any compare
// is run.
func TestWriteMarkdownWarnsTheGateCannotFire(t *testing.T) {
	m := synthManifest("drift", 3, []synthCell{{"hot", "16"}}, driftingPairs)
	a := results.Analyze(m, nil)
	var buf bytes.Buffer
	if err := results.WriteMarkdown(&buf, m, a); err != nil {
		t.Fatal(err)
	}
	c, err := results.Compare(m, m, results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var warning string
	for _, n := range c.Notes {
		if strings.HasPrefix(n, "WARNING: THE GATE CANNOT FIRE") {
			warning = n
		}
	}
	if warning == "" || !strings.Contains(warning, "for every cell: with as few as 3 valid runs a side and 2 comparisons") {
		t.Fatalf("compare's notes: %q", c.Notes)
	}
	notes := buf.String()[strings.Index(buf.String(), "## Notes\n"):]
	if !strings.Contains(notes, warning) {
		t.Errorf("the report's notes lack compare's warning %q:\n%s", warning, notes)
	}
}

// TestWriteMarkdownCountsInTheSingular: a spec of 1 repeat is "1 repeat",
// in the header and in the notes, never "1 repeats"; and a count of one
// run is "1 valid run".
func TestWriteMarkdownCountsInTheSingular(t *testing.T) {
	m := synthManifest("once", 1, []synthCell{{"hot", "16"}}, driftingPairs)
	a := results.Analyze(m, nil)
	var buf bytes.Buffer
	if err := results.WriteMarkdown(&buf, m, a); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"- spec: once from embedded:once, 1 repeat, 2 cells\n",
		"with 1 repeat and 1 cell the smallest adjusted p",
		"with as few as 1 valid run a side and 2 comparisons",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"1 repeats", "1 cells", "1 valid runs"} {
		if strings.Contains(out, bad) {
			t.Errorf("the report says %q", bad)
		}
	}
}
