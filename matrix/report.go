package matrix

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/htmlreport"
)

// Render writes a run directory's derived files from its manifest and the
// runs' interval logs: summary.json (the analysis), report.md, report.html
// and bench.txt. Each is written whole through a rename, so a reader never
// sees half a report; running it again gives the same files.
func Render(dir string) error {
	m, err := results.ReadManifest(dir)
	if err != nil {
		return err
	}
	hists, err := results.CellHistograms(dir, m)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	a := results.Analyze(m, hists)
	outputs := []struct {
		file  string
		write func(*bytes.Buffer) error
	}{
		{results.AnalysisFile, func(b *bytes.Buffer) error {
			enc := json.NewEncoder(b)
			enc.SetIndent("", "  ")
			return enc.Encode(a)
		}},
		{results.MarkdownFile, func(b *bytes.Buffer) error { return results.WriteMarkdown(b, m, a) }},
		{results.BenchFile, func(b *bytes.Buffer) error { return results.WriteBench(b, m) }},
		{results.HTMLFile, func(b *bytes.Buffer) error { return htmlreport.Write(b, m, a, hists) }},
	}
	for _, o := range outputs {
		var b bytes.Buffer
		if err := o.write(&b); err != nil {
			return fmt.Errorf("report: %s: %w", o.file, err)
		}
		if err := results.WriteFileAtomic(filepath.Join(dir, o.file), b.Bytes()); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	return nil
}
