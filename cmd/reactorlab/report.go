//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/matrix"
	"github.com/reactorlab/reactorlab/results"
)

const reportSynopsis = "reactorlab report DIR [--json FILE|-]"

const reportDescription = `Writes summary.json, report.md, report.html and bench.txt again from
DIR's manifest.json and the runs' HDR logs (for a suite, in each spec's
directory), and prints the summary (on stderr with --json -). Running it
twice gives the same files. Exit 0: written; 1: a report could not be
written; 2: DIR is not a run directory, or bad arguments.`

// reportCmd is `reactorlab report DIR`: write the reports again from the
// manifest and the runs' logs.
func reportCmd(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab report", reportSynopsis, reportDescription)
	jsonOut := c.Flags.String("json", "", "also write the result (each spec's summary.json, its runs and directory) as JSON to `FILE`; - writes it alone on stdout, and the summary on stderr")
	pos, done, code := c.Parse(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 {
		return c.Usagef(stderr, "want one run directory (%d given)", len(pos))
	}
	human := cli.HumanOut(*jsonOut, stdout, stderr)
	subs, err := matrix.SuiteDirs(pos[0])
	if err != nil {
		return c.Errorf(stderr, cli.ExitUsage, "%v", err)
	}
	result := matrixResult{Dir: pos[0], Complete: true}
	for _, sub := range subs {
		dir := filepath.Join(pos[0], sub)
		if err := matrix.Render(dir); err != nil {
			return c.Errorf(stderr, cli.ExitFail, "%s: %v", dir, err)
		}
		if err := printRunSummary(human, dir); err != nil {
			return c.Errorf(stderr, cli.ExitFail, "%s: %v", dir, err)
		}
		sr := specResultOf(nil, dir, matrix.Shard{})
		result.Specs = append(result.Specs, sr)
		result.Source, result.Suite = sr.source, suiteName(sr.source)
		result.Complete = result.Complete && sr.Runs == sr.Planned
	}
	if *jsonOut != "" {
		if err := cli.WriteTo(*jsonOut, stdout, result.write); err != nil {
			return c.Errorf(stderr, cli.ExitFail, "--json: %v", err)
		}
	}
	return cli.ExitOK
}

// printRunSummary prints where the reports are and the summary table of
// the markdown report.
func printRunSummary(w io.Writer, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, results.MarkdownFile))
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s\n", summarySection(string(b)))
	fmt.Fprintf(w, "reports: %s, %s (bench.txt for benchstat)\n\n",
		filepath.Join(dir, results.MarkdownFile), filepath.Join(dir, results.HTMLFile))
	return nil
}

// summarySection is what a person reads first of the markdown report: the
// header, the method, the summary table and the notes, leaving out the
// per-cell details and the glossary.
func summarySection(md string) string {
	section := func(title string) (int, int) {
		i := strings.Index(md, "\n## "+title+"\n")
		if i < 0 {
			return -1, -1
		}
		j := strings.Index(md[i+1:], "\n## ")
		if j < 0 {
			return i, len(md)
		}
		return i, i + 1 + j
	}
	out := md
	if i, _ := section("Cells"); i >= 0 {
		out = md[:i]
	}
	if i, j := section("Notes"); i >= 0 {
		out = strings.TrimRight(out, "\n") + "\n" + md[i:j]
	}
	return strings.TrimRight(out, "\n")
}
