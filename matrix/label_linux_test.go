//go:build linux

package matrix

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/results"
)

// labelSpec sets a labelled command beside a design and an unlabelled
// one: the first's cell is reactor=mysrv, its command, with a space in
// it, its configuration.
const labelSpec = `
name: labelled
repeats: 2
baseline:
  reactor: lt
  hot: 2
  inflight: 4
  duration: 2s
  warmup: 1s
factors:
  - name: reactor
    values:
      - et
      - {cmd: /bin/cat --long-command-line, label: mysrv}
      - {cmd: /bin/cat --plain}
`

// TestLabelNamesTheCell: a factor value's label is the cell's name in
// every report (the manifest's ID, summary.json, report.md's summary
// table, report.html, bench.txt's benchmark names and compare's cells),
// while its configuration and description keep the command; compare
// does not take a relabelled cell, or a label moved to another command,
// for the same cell.
func TestLabelNamesTheCell(t *testing.T) {
	spec, err := Parse([]byte(labelSpec))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	o := Options{Spec: spec, Source: "test", Text: labelSpec, Dir: dir, Placement: lab.Unpinned, RunCell: fakeRunCell(dir)}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if err := Render(dir); err != nil {
		t.Fatal(err)
	}
	m, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := m.Cell("reactor=mysrv")
	if !ok {
		t.Fatalf("no cell reactor=mysrv among %+v", m.Cells)
	}
	if c.Label != "mysrv" || c.Value != "cmd:/bin/cat --long-command-line" || c.Config["target"] != c.Value || !strings.Contains(c.Describe, "target /bin/cat --long-command-line") {
		t.Errorf("cell reactor=mysrv: %+v, want its label beside the command as its value, configuration and description", c)
	}
	read := func(f string) string {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	md := read(results.MarkdownFile)
	summary, _, _ := strings.Cut(md, "\n## Cells")
	for f, text := range map[string]string{"report.md's summary": summary, results.AnalysisFile: read(results.AnalysisFile), results.HTMLFile: read(results.HTMLFile)} {
		if !strings.Contains(text, "reactor=mysrv") {
			t.Errorf("%s does not name the cell reactor=mysrv", f)
		}
	}
	if strings.Contains(summary, "reactor=cmd:/bin/cat --long") {
		t.Errorf("report.md's summary names the cell by its command:\n%s", summary)
	}
	bench := read(results.BenchFile)
	if !strings.Contains(bench, "BenchmarkLabelled/reactor=mysrv 1 ") || strings.Contains(bench, "reactor=cmd:∕bin∕cat_--long") {
		t.Errorf("bench.txt does not name the cell by its label alone:\n%s", bench)
	}
	// A command without a label is named by it, as its ID is, not "-".
	if !strings.Contains(bench, "BenchmarkLabelled/reactor=cmd:∕bin∕cat_--plain 1 ") || strings.Contains(bench, "reactor=- ") {
		t.Errorf("bench.txt does not name the unlabelled command's cell by its command:\n%s", bench)
	}

	cmp, err := results.Compare(m, m, results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := cmp.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "reactor=mysrv") || strings.Contains(table.String(), "reactor=cmd:/bin/cat --long") {
		t.Errorf("compare's table does not name the cell by its label:\n%s", table.String())
	}

	// Relabelled: the cell is only in the old runs, and the new one only
	// in the new; the label moved to another command: its configuration
	// differs.
	relabel := func(id, label, command string) *results.Manifest {
		n, err := results.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n.Cells {
			if n.Cells[i].ID == "reactor=mysrv" {
				n.Cells[i].ID, n.Cells[i].Label, n.Cells[i].Config["target"] = id, label, command
			}
		}
		for i := range n.Runs {
			for _, p := range []*string{&n.Runs[i].Cell, &n.Runs[i].Pair} {
				if *p == "reactor=mysrv" {
					*p = id
				}
			}
		}
		return n
	}
	why := func(c *results.Comparison, cell string) results.NotComparedReason {
		for _, nc := range c.NotCompared {
			if nc.Cell == cell {
				return nc.Why
			}
		}
		return ""
	}
	renamed, err := results.Compare(m, relabel("reactor=theirs", "theirs", c.Config["target"]), results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if why(renamed, "reactor=mysrv") != results.OnlyOld || why(renamed, "reactor=theirs") != results.OnlyNew {
		t.Errorf("a relabelled cell: not compared %+v, want reactor=mysrv only in the old runs and reactor=theirs only in the new", renamed.NotCompared)
	}
	moved, err := results.Compare(m, relabel("reactor=mysrv", "mysrv", "cmd:/bin/cat --other"), results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if why(moved, "reactor=mysrv") != results.ConfigDiffers {
		t.Errorf("a label moved to another command: not compared %+v, want reactor=mysrv's configuration to differ", moved.NotCompared)
	}
}
