//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/matrix"
	"github.com/reactorlab/reactorlab/results"
)

// matrixCmd is `reactorlab matrix [SUITE|FILE]`: run a suite of
// one-factor-at-a-time specs and write its run directory and reports.
func matrixCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reactorlab matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: reactorlab matrix [SUITE|FILE.yaml] [flags]\n\n"+
			"Runs a built-in suite (default %s; --list shows them) or a spec file, each cell\n"+
			"paired with a baseline run (A B A C …), and writes manifest.json, the runs'\n"+
			"HDR logs, summary.json, report.md, report.html and bench.txt. Exit 0 when every\n"+
			"run was valid, 1 when one was not or the matrix stopped early, 2 for bad flags.\n\n", matrix.DefaultSuite)
		fs.PrintDefaults()
	}
	list := fs.Bool("list", false, "list the built-in suites with their specs and estimated time, and exit")
	shardText := fs.String("shard", "1/1", "run only shard i of n: a deterministic share of each spec's cells, each with its own baseline runs")
	out := fs.String("out", "", "run directory, new or empty (default reactorlab-runs/matrix-SUITE-TIME)")
	cpus := defaultCPUs()
	fs.Var(&cpus, "cpus", "placement: server=CPU,loadgen=CPU (or none; default: the first two CPUs this process may use)")
	labMode := fs.String("lab", "auto", "network namespaces and veth: auto (lab if possible, else loopback, saying why), on (lab or fail), off (loopback)")
	grace := fs.Duration("grace", harness.DefaultGrace, "time between SIGTERM and SIGKILL when stopping a server")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	refuse := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "reactorlab matrix: "+format+"\n", a...)
		return exitUsage
	}
	if *list {
		if len(pos) > 0 {
			return refuse("--list takes no argument")
		}
		return listSuites(stdout, stderr)
	}
	if len(pos) > 1 {
		return refuse("one suite or spec file at a time (got %d arguments)", len(pos))
	}
	which := matrix.DefaultSuite
	if len(pos) == 1 {
		which = pos[0]
	}
	name, source, text, err := loadSuite(which)
	if err != nil {
		return refuse("%v", err)
	}
	specs, err := matrix.ParseSuite([]byte(text))
	if err != nil {
		return refuse("%s: %v", source, err)
	}
	shard, err := matrix.ParseShard(*shardText)
	if err != nil {
		return refuse("--shard: %v", err)
	}
	mode, ok := labModes[*labMode]
	if !ok {
		return refuse("--lab %q (accepted: auto, on, off)", *labMode)
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("reactorlab-runs", "matrix-"+name+"-"+time.Now().Format("20060102-150405"))
		if shard.Count > 1 {
			dir += fmt.Sprintf("-shard%dof%d", shard.Index, shard.Count)
		}
	}

	for _, spec := range specs {
		if err := spec.CheckTargets(shard); err != nil {
			return refuse("%s: %v", spec.Name, err)
		}
	}
	// A suite writes one subdirectory per spec: the directory itself must
	// be new or empty, so that no earlier result is mixed in.
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return refuse("%v: %s holds %d entries (accepted: a new or empty directory)", matrix.ErrDirNotEmpty, dir, len(ents))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	fmt.Fprintf(stderr, "reactorlab matrix: %s (%s), shard %s, %d spec(s), about %s; results in %s\n",
		name, source, shard, len(specs), matrix.Estimate(specs, shard).Round(time.Second), dir)
	code := 0
	for _, spec := range specs {
		sub := dir
		if len(specs) > 1 {
			sub = filepath.Join(dir, spec.Name)
		}
		m, err := matrix.Run(ctx, matrix.Options{
			Spec: spec, Source: source, Text: text, Dir: sub, Shard: shard,
			CPUs: cpus, Mode: mode, Grace: *grace, Log: stderr,
		})
		if m == nil {
			if errors.Is(err, matrix.ErrDirNotEmpty) {
				return refuse("%v", err)
			}
			fmt.Fprintf(stderr, "reactorlab matrix: %s: %v\n", spec.Name, err)
			return 1
		}
		// Whatever happened, what was measured is reported.
		if rerr := matrix.Render(sub); rerr != nil {
			fmt.Fprintf(stderr, "reactorlab matrix: %s: reports: %v\n", spec.Name, rerr)
			code = 1
		}
		if err := printRunSummary(stdout, sub); err != nil {
			fmt.Fprintf(stderr, "reactorlab matrix: %s: %v\n", spec.Name, err)
			code = 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "reactorlab matrix: %s: %v\n", spec.Name, err)
			return 1
		}
		if invalid := countInvalid(m); invalid > 0 {
			fmt.Fprintf(stderr, "reactorlab matrix: %s: %d of %d runs invalid (reasons in %s)\n", spec.Name, invalid, len(m.Runs), filepath.Join(sub, results.MarkdownFile))
			code = 1
		}
	}
	fmt.Fprintf(stderr, "reactorlab matrix: done in %s; results in %s\n", time.Since(started).Round(time.Second), dir)
	return code
}

func countInvalid(m *results.Manifest) int {
	n := 0
	for _, r := range m.Runs {
		if !r.Valid {
			n++
		}
	}
	return n
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

// loadSuite finds a suite: a built-in name, or a YAML file.
func loadSuite(which string) (name, source, text string, err error) {
	if !strings.ContainsAny(which, "/.") {
		text, err := matrix.EmbeddedText(which)
		if err != nil {
			return "", "", "", fmt.Errorf("%v, or a spec file (FILE.yaml)", err)
		}
		return which, "embedded:" + which, text, nil
	}
	b, err := os.ReadFile(which)
	if err != nil {
		return "", "", "", err
	}
	name = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(which), ".yaml"), ".yml")
	return name, which, string(b), nil
}

func listSuites(stdout, stderr io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SUITE\tSPECS\tCELLS\tRUNS\tTIME\tWHAT")
	for _, e := range matrix.EmbeddedSuites() {
		text, err := matrix.EmbeddedText(e.Name)
		if err == nil {
			var specs []*matrix.Spec
			if specs, err = matrix.ParseSuite([]byte(text)); err == nil {
				cells, runs := 0, 0
				var names []string
				for _, s := range specs {
					cells += len(s.Expand())
					runs += len(s.Plan(matrix.Shard{}))
					names = append(names, s.Name)
				}
				def := ""
				if e.Name == matrix.DefaultSuite {
					def = " (default)"
				}
				fmt.Fprintf(tw, "%s%s\t%s\t%d\t%d\t~%.0f min\t%s\n", e.Name, def, strings.Join(names, ","), cells, runs,
					math.Ceil(matrix.Estimate(specs, matrix.Shard{}).Minutes()), e.Summary)
				continue
			}
		}
		fmt.Fprintf(stderr, "reactorlab matrix: built-in suite %s: %v\n", e.Name, err)
		return 1
	}
	tw.Flush()
	return 0
}

// mergeCmd is `reactorlab merge OUT SHARD_DIR...`.
func mergeCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reactorlab merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: reactorlab merge OUT SHARD_DIR...\n\n"+
			"Joins the run directories of the shards (--shard i/n) of one matrix run into OUT\n"+
			"(new or empty) and writes its reports. Every shard i/n must be there; the\n"+
			"runs' HDR logs are copied unchanged, so the merge equals an unsharded run.")
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if len(pos) < 2 {
		fmt.Fprintln(stderr, "reactorlab merge: want OUT and at least one shard directory")
		fs.Usage()
		return exitUsage
	}
	outDir, srcs := pos[0], pos[1:]
	// A suite's shards hold one subdirectory per spec: merge each.
	subs, err := matrix.SuiteDirs(srcs[0])
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab merge: %v\n", err)
		return exitUsage
	}
	for _, sub := range subs {
		var from []string
		for _, s := range srcs {
			from = append(from, filepath.Join(s, sub))
		}
		to := filepath.Join(outDir, sub)
		m, err := matrix.Merge(to, from)
		if err != nil {
			fmt.Fprintf(stderr, "reactorlab merge: %v\n", err)
			if errors.Is(err, matrix.ErrMerge) || errors.Is(err, matrix.ErrDirNotEmpty) || errors.Is(err, results.ErrManifest) {
				return exitUsage
			}
			return 1
		}
		if err := matrix.Render(to); err != nil {
			fmt.Fprintf(stderr, "reactorlab merge: %s: reports: %v\n", to, err)
			return 1
		}
		fmt.Fprintf(stdout, "merged %d shards, %d runs of %s into %s\n", len(m.Shards), len(m.Runs), m.Spec.Name, to)
	}
	return 0
}

// reportCmd is `reactorlab report DIR`: write the reports again from the
// manifest and the runs' logs.
func reportCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reactorlab report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: reactorlab report DIR\n\n"+
			"Writes summary.json, report.md, report.html and bench.txt again from DIR's\n"+
			"manifest.json and the runs' HDR logs (for a suite, in each spec's directory),\n"+
			"and prints the summary.")
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	subs, err := matrix.SuiteDirs(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "reactorlab report: %v\n", err)
		return exitUsage
	}
	for _, sub := range subs {
		dir := filepath.Join(pos[0], sub)
		if err := matrix.Render(dir); err != nil {
			fmt.Fprintf(stderr, "reactorlab report: %s: %v\n", dir, err)
			return 1
		}
		if err := printRunSummary(stdout, dir); err != nil {
			fmt.Fprintf(stderr, "reactorlab report: %s: %v\n", dir, err)
			return 1
		}
	}
	return 0
}

// parseInterspersed parses fs's flags wherever they stand among args
// ("compare OLD NEW --threshold 5%" as well as "compare --threshold 5% OLD
// NEW") and returns the positional arguments in order; "--" ends the
// flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
