//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/matrix"
	"github.com/reactorlab/reactorlab/results"
)

const matrixSynopsis = `reactorlab matrix [SUITE|FILE.yaml] [--shard i/n] [--out DIR] [--json FILE|-]
reactorlab matrix --resume DIR [--json FILE|-]
reactorlab matrix --list`

var matrixDescription = `Runs a built-in suite (default ` + matrix.DefaultSuite + `; --list shows them with their
estimated time) or the specs of a YAML file, one factor at a time: for each
repeat, each cell's run right after a baseline run (A B A C ...), each in
the lab. A spec, a value the server or load generator would reject, or a
target program that is not there is refused before anything runs, naming
the file, line and field. It writes a run directory (new or empty; a
suite's has one subdirectory per spec): manifest.json, every run's HDR log,
summary.json, report.md, report.html and bench.txt, and prints the summary
(on stderr with --json -). Interrupted (SIGINT, SIGTERM), it reports what
it measured and prints the --resume command that continues the run: the
same spec, shard, placement and build, its valid runs kept (a pair whose
cell run was cut short is measured again whole), the rest of the plan run.
Exit 0: every run valid; 1: a run invalid, or the matrix could not finish;
2: refused before anything ran (bad flags, spec or target program; a
directory not empty, or that --resume cannot continue: not a matrix run,
another spec or build, or complete); 130: interrupted.`

// matrixRunCell, when not nil, runs each cell in the harness's place (the
// tests' fake).
var matrixRunCell func(ctx context.Context, c harness.Cell) (*harness.CellResult, error)

// matrixJob is one spec of a matrix invocation and what becomes of it.
type matrixJob struct {
	spec *matrix.Spec
	dir  string
	// resume: continue the run in dir; done: dir holds a complete run,
	// kept as it is.
	resume, done bool
	// kept is how many of the plan's runs a resume keeps.
	kept int
}

// matrixCmd is `reactorlab matrix [SUITE|FILE]`: run a suite of
// one-factor-at-a-time specs and write its run directory and reports, or
// continue an interrupted one (--resume).
func matrixCmd(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab matrix", matrixSynopsis, matrixDescription)
	list := c.Flags.Bool("list", false, "list the built-in suites with their specs, runs and estimated time, and exit")
	shardText := c.Flags.String("shard", "1/1", "run only shard `i/n`: a deterministic share of each spec's cells, each with its own baseline runs (with --resume: the shard recorded)")
	out := c.Flags.String("out", "", "run `DIR`, new or empty (default reactorlab-runs/matrix-SUITE-TIME)")
	resume := c.Flags.String("resume", "", "continue the interrupted run in `DIR` (its spec, shard, placement and lab mode are the ones recorded; a SUITE or FILE given must be the same spec)")
	jsonOut := c.Flags.String("json", "", "also write the result (each spec's summary.json, its runs and directory) as JSON to `FILE`; - writes it alone on stdout, and the summary on stderr")
	cpus := defaultCPUs()
	c.Flags.Var(&cpus, "cpus", "`PLACEMENT` server=CPU,loadgen=CPU, or none; by default the first two CPUs this process may use (with --resume: the placement recorded)")
	labMode := c.Flags.String("lab", "auto", "`MODE` of network namespaces and veth: auto (lab if possible, else loopback, saying why), on (lab or fail), off (loopback); with --resume: the mode recorded")
	grace := c.Flags.Duration("grace", harness.DefaultGrace, "time between SIGTERM and SIGKILL when stopping a server")
	pos, done, code := c.Parse(args, stdout, stderr)
	if done {
		return code
	}
	set := c.Set()
	if *list {
		for _, f := range []string{"resume", "out", "json", "shard"} {
			if set[f] {
				return c.Usagef(stderr, "--list takes no --%s", f)
			}
		}
		if len(pos) > 0 {
			return c.Usagef(stderr, "--list takes no argument (got %q)", pos[0])
		}
		return listSuites(c, stdout, stderr)
	}
	if len(pos) > 1 {
		return c.Usagef(stderr, "one suite or spec file at a time (got %d arguments)", len(pos))
	}
	if set["resume"] && set["out"] {
		return c.Usagef(stderr, "--resume DIR continues the run in DIR: no --out with it")
	}
	if set["resume"] && *resume == "" {
		return c.Usagef(stderr, "--resume needs a run directory")
	}
	shard, err := matrix.ParseShard(*shardText)
	if err != nil {
		return c.Usagef(stderr, "--shard: %v", err)
	}
	mode, ok := labModes[*labMode]
	if !ok {
		return c.Usagef(stderr, "--lab %q (accepted: auto, on, off)", *labMode)
	}
	human := stdout
	if *jsonOut == cli.StdoutPath {
		human = stderr
	}

	// The spec: as given, or, resuming, as recorded (and a spec given must
	// be the recorded one).
	var name, source, text, dir string
	var first *results.Manifest
	if *resume != "" {
		dir = *resume
		first, err = firstManifest(dir)
		if err != nil {
			return c.Errorf(stderr, cli.ExitUsage, "--resume %s: %s", dir, plain(err))
		}
		source, text = first.Spec.Source, first.Spec.Text
		name = suiteName(source)
		if len(pos) == 1 {
			n, s, t, err := loadSuite(pos[0])
			if err != nil {
				return c.Usagef(stderr, "%v", err)
			}
			if t != text {
				return c.Errorf(stderr, cli.ExitUsage, "--resume %s: cannot resume: it was run from %s, whose text differs from %s's: resume with the spec it was run with (or name none)",
					dir, source, s)
			}
			name, source = n, s
		}
		// What the run was made with, unless the flags say otherwise
		// (and then it must agree: CheckResume says so).
		sh := first.Shards[0]
		if !set["shard"] {
			shard = matrix.Shard{Index: sh.Index, Count: sh.Count}
		}
		if !set["cpus"] {
			if err := cpus.Set(sh.Placement); err != nil {
				return c.Errorf(stderr, cli.ExitUsage, "--resume %s: recorded placement %q: %v", dir, sh.Placement, err)
			}
		}
		if !set["lab"] {
			mode = harness.Mode(sh.Mode)
		}
	} else {
		which := matrix.DefaultSuite
		if len(pos) == 1 {
			which = pos[0]
		}
		name, source, text, err = loadSuite(which)
		if err != nil {
			return c.Usagef(stderr, "%v", err)
		}
	}
	specs, err := matrix.ParseSuite([]byte(text))
	if err != nil {
		return c.Errorf(stderr, cli.ExitUsage, "%s: %v", source, err)
	}
	if dir == "" {
		dir = *out
	}
	if dir == "" {
		dir = filepath.Join("reactorlab-runs", "matrix-"+name+"-"+time.Now().Format("20060102-150405"))
		if shard.Count > 1 {
			dir += fmt.Sprintf("-shard%dof%d", shard.Index, shard.Count)
		}
	}
	if *resume == "" {
		// A file where the run directory goes (or above it) is the
		// --out value's fault, as reactorlab run says of its own.
		if err := harness.CheckCellDir(dir); errors.Is(err, syscall.ENOTDIR) {
			if set["out"] {
				return c.Usagef(stderr, "--out %v (accepted: a new or empty directory)", err)
			}
			return c.Errorf(stderr, cli.ExitUsage, "%v (accepted: a new or empty directory; choose one with --out)", err)
		}
	}
	opts := func(j *matrixJob) matrix.Options {
		return matrix.Options{
			Spec: j.spec, Source: source, Text: text, Dir: j.dir, Shard: shard,
			CPUs: cpus, Mode: mode, Grace: *grace, Resume: j.resume, Log: stderr, RunCell: matrixRunCell,
		}
	}
	var jobs []*matrixJob
	for _, spec := range specs {
		j := &matrixJob{spec: spec, dir: dir}
		if len(specs) > 1 {
			j.dir = filepath.Join(dir, spec.Name)
		}
		jobs = append(jobs, j)
	}

	// Everything that can be refused is, before anything runs: every
	// spec's targets and cells, the directory.
	for _, j := range jobs {
		if err := matrix.Check(opts(j)); err != nil {
			if errors.Is(err, matrix.ErrTarget) {
				return c.Errorf(stderr, cli.ExitUsage, "%s: %s", source, plain(err))
			}
			return c.Errorf(stderr, cli.ExitUsage, "%s: spec %s: %s", source, j.spec.Name, plain(err))
		}
	}
	resumeLine := resumeCommand(dir, set, *jsonOut, *grace)
	if *resume != "" {
		if code, refused := planResume(c, stderr, dir, jobs, opts); refused {
			return code
		}
	} else if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		// A suite writes one subdirectory per spec: the directory itself
		// must be new or empty, so that no earlier result is mixed in.
		hint := ""
		if _, err := os.Stat(filepath.Join(dir, results.ManifestFile)); err == nil {
			hint = fmt.Sprintf("; to continue an interrupted run there: %s", resumeLine)
		} else if subs, err := matrix.SuiteDirs(dir); err == nil && len(subs) > 0 {
			hint = fmt.Sprintf("; to continue an interrupted run there: %s", resumeLine)
		}
		return c.Errorf(stderr, cli.ExitUsage, "%s: %s holds %d entries (accepted: a new or empty directory)%s", plain(matrix.ErrDirNotEmpty), dir, len(ents), hint)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	var left time.Duration
	kept, planned := 0, 0
	for _, j := range jobs {
		plan := j.spec.Plan(shard)
		planned += len(plan)
		if j.done {
			kept += len(plan)
			continue
		}
		kept += j.kept
		left += matrix.EstimatePlan(plan[j.kept:])
	}
	if *resume != "" {
		fmt.Fprintf(stderr, "reactorlab matrix: %s (%s), shard %s, %d spec(s): resuming %s, %d of %d planned runs kept, about %s\n",
			name, source, shard, len(specs), dir, kept, planned, matrix.FormatEstimate(left))
	} else {
		fmt.Fprintf(stderr, "reactorlab matrix: %s (%s), shard %s, %d spec(s), about %s; results in %s\n",
			name, source, shard, len(specs), matrix.FormatEstimate(left), dir)
	}
	result := matrixResult{Suite: name, Source: source, Dir: dir, Shard: shard.String()}
	code = cli.ExitOK
	stopped := false // interrupted, or could not finish
	for _, j := range jobs {
		if stopped {
			break
		}
		if j.done {
			fmt.Fprintf(stderr, "reactorlab matrix: %s: complete in %s, kept as it is\n", j.spec.Name, j.dir)
			continue
		}
		m, err := matrix.Run(ctx, opts(j))
		if m == nil {
			// Refused before it wrote anything: what Check could not
			// know (the directory was taken meanwhile), or it could not
			// write.
			if errors.Is(err, matrix.ErrDirNotEmpty) || errors.Is(err, matrix.ErrDirBusy) || errors.Is(err, matrix.ErrResume) {
				return c.Errorf(stderr, cli.ExitUsage, "%s: %s", j.spec.Name, plain(err))
			}
			c.Errorf(stderr, cli.ExitFail, "%s: %s", j.spec.Name, plain(err))
			code, stopped = cli.ExitFail, true
			break
		}
		// Whatever happened, what was measured is reported.
		if rerr := matrix.Render(j.dir); rerr != nil {
			c.Errorf(stderr, cli.ExitFail, "%s: reports: %v", j.spec.Name, rerr)
			code = cli.ExitFail
		} else if perr := printRunSummary(human, j.dir); perr != nil {
			c.Errorf(stderr, cli.ExitFail, "%s: %v", j.spec.Name, perr)
			code = cli.ExitFail
		}
		if err != nil {
			stopped, code = true, cli.ExitFail
			if ctx.Err() != nil {
				code = cli.ExitInterrupted
			}
			c.Errorf(stderr, code, "%s: %s", j.spec.Name, plain(err))
			break
		}
		if invalid := countInvalid(m); invalid > 0 {
			c.Errorf(stderr, cli.ExitFail, "%s: %d of %d runs invalid (reasons in %s)", j.spec.Name, invalid, len(m.Runs), filepath.Join(j.dir, results.MarkdownFile))
			if code == cli.ExitOK {
				code = cli.ExitFail
			}
		}
	}
	if ctx.Err() != nil && code != cli.ExitInterrupted {
		// The signal came between two specs, or as the last one ended.
		code, stopped = cli.ExitInterrupted, true
	}
	// --resume continues a run whose manifest was written: a matrix that
	// stopped before it wrote one has nothing to continue.
	resumable := false
	if stopped {
		_, err := firstManifest(dir)
		resumable = err == nil
		result.Interrupted = code == cli.ExitInterrupted
		if resumable {
			result.Resume = resumeLine
		}
	}
	result.Complete = !stopped
	for _, j := range jobs {
		result.Specs = append(result.Specs, specResultOf(j.spec, j.dir, shard))
	}
	if *jsonOut != "" {
		if err := cli.WriteTo(*jsonOut, stdout, result.write); err != nil {
			c.Errorf(stderr, cli.ExitFail, "--json: %v", err)
			if code == cli.ExitOK {
				code = cli.ExitFail
			}
		}
	}
	if stopped {
		what := "stopped"
		if code == cli.ExitInterrupted {
			what = "interrupted"
		}
		if !resumable {
			fmt.Fprintf(stderr, "reactorlab matrix: %s after %s; nothing recorded in %s\n", what, time.Since(started).Round(time.Second), dir)
			return code
		}
		fmt.Fprintf(stderr, "reactorlab matrix: %s after %s; results so far in %s\nto continue: %s\n", what, time.Since(started).Round(time.Second), dir, resumeLine)
		return code
	}
	fmt.Fprintf(stderr, "reactorlab matrix: done in %s; results in %s\n", time.Since(started).Round(time.Second), dir)
	return code
}

// planResume decides, spec by spec, what --resume DIR does: continue a
// spec's interrupted run, keep a complete one, or (a suite's spec that had
// not started) run it in its new subdirectory. It refuses (exit 2) a
// directory that is not a run of these specs, or one with nothing left to
// run.
func planResume(c *cli.Command, stderr io.Writer, dir string, jobs []*matrixJob, opts func(*matrixJob) matrix.Options) (int, bool) {
	subs, err := matrix.SuiteDirs(dir)
	if err != nil {
		return c.Errorf(stderr, cli.ExitUsage, "--resume %s: %v", dir, err), true
	}
	names := map[string]bool{}
	for _, j := range jobs {
		rel, _ := filepath.Rel(dir, j.dir)
		names[rel] = true
	}
	for _, s := range subs {
		if !names[s] {
			return c.Errorf(stderr, cli.ExitUsage, "--resume %s: %v: %s holds a run of no spec of this suite", dir, matrix.ErrResume, filepath.Join(dir, s)), true
		}
	}
	pending := 0
	var complete error
	for _, j := range jobs {
		if _, err := os.Stat(filepath.Join(j.dir, results.ManifestFile)); err != nil {
			// A suite's spec the interruption came before.
			if ents, err := os.ReadDir(j.dir); err == nil && len(ents) > 0 {
				return c.Errorf(stderr, cli.ExitUsage, "--resume %s: cannot resume: %s holds files but no %s", dir, j.dir, results.ManifestFile), true
			}
			pending++
			continue
		}
		j.resume = true
		r, err := matrix.CheckResume(opts(j))
		j.kept = r.Kept
		switch {
		case errors.Is(err, matrix.ErrComplete):
			j.resume, j.done, complete = false, true, err
		case err != nil:
			return c.Errorf(stderr, cli.ExitUsage, "--resume %s: %s", dir, plain(err)), true
		default:
			pending++
		}
	}
	switch {
	case pending > 0:
		return 0, false
	case len(jobs) == 1:
		return c.Errorf(stderr, cli.ExitUsage, "--resume %s: %s (run the matrix again, in a new directory, to measure again)", dir, plain(complete)), true
	}
	return c.Errorf(stderr, cli.ExitUsage, "--resume %s: cannot resume: every spec's plan has run to its end (run the matrix again, in a new directory, to measure again)", dir), true
}

// plain is err's text without the package prefix a command's own name
// makes redundant ("matrix: ").
func plain(err error) string {
	return strings.TrimPrefix(err.Error(), "matrix: ")
}

// firstManifest reads the manifest of the run in dir, or of its first
// spec's for a suite: where the spec text and the shard are recorded.
func firstManifest(dir string) (*results.Manifest, error) {
	subs, err := matrix.SuiteDirs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", matrix.ErrResume, plain(err))
	}
	m, err := results.ReadManifest(filepath.Join(dir, subs[0]))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", matrix.ErrResume, err)
	}
	if len(m.Shards) != 1 {
		return nil, fmt.Errorf("%w: %s is a merge of %d shards (accepted: the directory of one matrix run or shard)", matrix.ErrResume, filepath.Join(dir, subs[0]), len(m.Shards))
	}
	return m, nil
}

// suiteName is the short name of a spec's source: the built-in suite's
// name, or the file's without .yaml.
func suiteName(source string) string {
	if n, ok := strings.CutPrefix(source, "embedded:"); ok {
		return n
	}
	return strings.TrimSuffix(strings.TrimSuffix(filepath.Base(source), ".yaml"), ".yml")
}

// resumeCommand is the command line that continues the run in dir: the
// flags that are not recorded in its manifest, as given.
func resumeCommand(dir string, set map[string]bool, jsonOut string, grace time.Duration) string {
	line := "reactorlab matrix --resume " + shellQuote(dir)
	if jsonOut != "" {
		line += " --json " + shellQuote(jsonOut)
	}
	if set["grace"] {
		line += " --grace " + grace.String()
	}
	return line
}

// shellQuote quotes s for a POSIX shell, when it needs it.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
	return suiteName(which), which, string(b), nil
}

func listSuites(c *cli.Command, stdout, stderr io.Writer) int {
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
				fmt.Fprintf(tw, "%s%s\t%s\t%d\t%d\t~%s\t%s\n", e.Name, def, strings.Join(names, ","), cells, runs,
					matrix.FormatEstimate(matrix.Estimate(specs, matrix.Shard{})), e.Summary)
				continue
			}
		}
		return c.Errorf(stderr, cli.ExitFail, "built-in suite %s: %v", e.Name, err)
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nTIME is estimated for 2 cores: each run's warm-up and duration, plus its measured overhead.")
	return cli.ExitOK
}

const mergeSynopsis = "reactorlab merge OUT SHARD_DIR... [--json FILE|-]"

const mergeDescription = `Joins the run directories of the shards (matrix --shard i/n) of one
matrix run into OUT (new or empty), spec by spec for a suite, and writes
its reports. Every shard i/n of one split, spec and build must be there;
each run's directory is copied unchanged, so the merge equals an unsharded
run (the HDR histograms merge losslessly). Exit 0: merged; 1: a file could
not be read or written; 2: refused before anything was written (missing,
repeated or mismatched shards, OUT not empty, bad arguments).`

// mergeCmd is `reactorlab merge OUT SHARD_DIR...`.
func mergeCmd(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab merge", mergeSynopsis, mergeDescription)
	jsonOut := c.Flags.String("json", "", "also write the merged result (each spec's summary.json, its runs and directory) as JSON to `FILE`; - writes it alone on stdout")
	pos, done, code := c.Parse(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) < 2 {
		return c.Usagef(stderr, "want OUT and at least one shard directory (%d given)", len(pos))
	}
	human := stdout
	if *jsonOut == cli.StdoutPath {
		human = stderr
	}
	outDir, srcs := pos[0], pos[1:]
	// A suite's shards hold one subdirectory per spec: merge each.
	subs, err := matrix.SuiteDirs(srcs[0])
	if err != nil {
		return c.Errorf(stderr, cli.ExitUsage, "%v", err)
	}
	result := matrixResult{Dir: outDir, Complete: true}
	for _, sub := range subs {
		var from []string
		for _, s := range srcs {
			from = append(from, filepath.Join(s, sub))
		}
		to := filepath.Join(outDir, sub)
		m, err := matrix.Merge(to, from)
		if err != nil {
			if errors.Is(err, matrix.ErrMerge) || errors.Is(err, matrix.ErrDirNotEmpty) || errors.Is(err, results.ErrManifest) {
				return c.Errorf(stderr, cli.ExitUsage, "%v", err)
			}
			return c.Errorf(stderr, cli.ExitFail, "%v", err)
		}
		if err := matrix.Render(to); err != nil {
			return c.Errorf(stderr, cli.ExitFail, "%s: reports: %v", to, err)
		}
		fmt.Fprintf(human, "merged %d shards, %d runs of %s into %s\n", len(m.Shards), len(m.Runs), m.Spec.Name, to)
		result.Suite, result.Source = suiteName(m.Spec.Source), m.Spec.Source
		result.Specs = append(result.Specs, specResultOf(nil, to, matrix.Shard{}))
	}
	if *jsonOut != "" {
		if err := cli.WriteTo(*jsonOut, stdout, result.write); err != nil {
			return c.Errorf(stderr, cli.ExitFail, "--json: %v", err)
		}
	}
	return cli.ExitOK
}

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
	human := stdout
	if *jsonOut == cli.StdoutPath {
		human = stderr
	}
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
