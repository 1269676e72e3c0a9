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
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/matrix"
	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/figure"
)

const matrixSynopsis = `reactorlab matrix [SUITE|FILE.yaml] [--shard i/n] [--out DIR] [--json FILE|-]
reactorlab matrix --resume DIR [--json FILE|-]
reactorlab matrix --list
reactorlab matrix --print SUITE`

var matrixDescription = `Runs a built-in suite (default ` + matrix.DefaultSuite + `; --list shows them with their
estimated time, --print SUITE writes one's YAML to start a spec file from)
or the specs of a YAML file, one factor at a time: for each repeat, each
cell's run right after a baseline run (A B A C ...), each in the lab. A
spec, a value the server or load generator would reject, or a target program
that is not there is refused before anything runs, naming the file, line and
field (the errors in a spec's fields together, one per line); so is a cmd
target that cannot be started: each distinct one is started once first, as
conform starts it, and one that exits, is missing, listens elsewhere or does
not accept within --start-timeout is refused in run's words. It writes a run
directory (new or empty; a suite's has one subdirectory per spec):
manifest.json, every run's HDR log, summary.json, report.md, report.html and
bench.txt, and prints the summary (on stderr with --json -). Interrupted
(SIGINT, SIGTERM), it reports what it measured and prints the --resume
command that continues the run: the same spec, shard, placement and build,
its valid runs kept (a pair whose cell run was cut short is measured again
whole), the rest of the plan run. Exit 0: every run valid; 1: a run invalid,
or the matrix could not finish; 2: refused before anything ran (bad flags,
spec or target program; a target that could not be started; a directory not
empty, or that --resume cannot continue: not a matrix run, another spec or
build, or complete); 130: interrupted.`

// matrixRunCell, when not nil, runs each cell in the harness's place (the
// tests' fake).
var matrixRunCell func(ctx context.Context, c harness.CellSpec) (*harness.CellResult, error)

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
// continue an interrupted one (--resume). The steps: check the flags, find
// the spec (as given, or as recorded), plan a job per spec, refuse all
// that can be refused before anything runs, run the jobs, report.
func matrixCmd(args []string, stdout, stderr io.Writer) int {
	inv := &matrixInvocation{c: cli.New("reactorlab matrix", matrixSynopsis, matrixDescription), stdout: stdout, stderr: stderr}
	list, printName := inv.defineFlags()
	pos, done, code := inv.c.Parse(args, stdout, stderr)
	if done {
		return code
	}
	inv.set = inv.c.Set()
	if *list {
		return inv.listSuites(pos)
	}
	if inv.set["print"] {
		return inv.printSuite(*printName, pos)
	}
	for _, step := range []func([]string) (int, bool){inv.checkFlags, inv.resolveSpec, inv.planJobs, inv.refuseEarly} {
		if code, refused := step(pos); refused {
			return code
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if code, refused := inv.checkStarts(ctx); refused {
		return code
	}
	started := time.Now()
	inv.announce()
	code, stopped, refused := inv.runJobs(ctx)
	if refused {
		return code
	}
	return inv.finish(ctx, code, stopped, started)
}

// matrixInvocation is one `reactorlab matrix` command line and what it
// resolves to, step by step: the flags, the suite (its name, source and
// text), the run directory and a job per spec.
type matrixInvocation struct {
	c              *cli.Command
	stdout, stderr io.Writer
	// human is where the text a person reads goes: stdout, or stderr
	// when the JSON goes to stdout.
	human io.Writer
	set   map[string]bool

	shardText, out, resume, jsonOut, labMode string
	placement                                lab.Placement
	grace, startTimeout                      time.Duration
	shard                                    matrix.Shard
	mode                                     lab.Mode

	name, source, text, dir string
	specs                   []*matrix.Spec
	jobs                    []*matrixJob
	// resumeLine is the command that continues the run in dir.
	resumeLine string
}

// defineFlags defines the command's flags; it returns --list's and
// --print's.
func (inv *matrixInvocation) defineFlags() (list *bool, printName *string) {
	f := inv.c.Flags
	list = f.Bool("list", false, "list the built-in suites with their specs, runs and estimated time, and exit")
	printName = f.String("print", "", "write the built-in `SUITE`'s YAML to stdout, as it is built in (a suite of several files as one stream of documents), to start a spec file from, and exit")
	f.StringVar(&inv.shardText, "shard", "1/1", "run only shard `i/n`: a deterministic share of each spec's cells, each with its own baseline runs (with --resume: the shard recorded)")
	f.StringVar(&inv.out, "out", "", "run `DIR`, new or empty (default reactorlab-runs/matrix-SUITE-TIME)")
	f.StringVar(&inv.resume, "resume", "", "continue the interrupted run in `DIR` (its spec, shard, placement and lab mode are the ones recorded; a SUITE or FILE given must be the same spec)")
	f.StringVar(&inv.jsonOut, "json", "", "also write the result (each spec's summary.json, its runs and directory) as JSON to `FILE`; - writes it alone on stdout, and the summary on stderr")
	inv.placement = defaultPlacement()
	f.Var(&inv.placement, "cpus", "`PLACEMENT` server=LIST,loadgen=LIST, each a CPU list (0-3,8), count:N or none, for every cell whose spec has no cpus field; by default "+lab.DefaultPlacementText+", here "+defaultPlacement().String()+" (with --resume: the placement recorded)")
	f.StringVar(&inv.labMode, "lab", "auto", "`MODE` of network namespaces and veth: auto (lab if possible, else loopback, saying why), on (lab or fail), off (loopback); with --resume: the mode recorded")
	f.DurationVar(&inv.grace, "grace", lab.DefaultGrace, "time between SIGTERM and SIGKILL when stopping a server")
	f.DurationVar(&inv.startTimeout, "start-timeout", harness.DefaultStartTimeout, "how long each server may take to accept on its addresses, in every run and in the check of each cmd target before the first; one that does not is refused (exit 2)")
	return list, printName
}

// printSuite is --print SUITE, which takes no argument and no flag of a
// run: the suite's text exactly as matrix.EmbeddedText gives it, the text
// `reactorlab matrix SUITE` runs.
func (inv *matrixInvocation) printSuite(name string, pos []string) int {
	for _, f := range []string{"list", "resume", "out", "json", "shard"} {
		if inv.set[f] {
			return inv.c.Usagef(inv.stderr, "--print takes no --%s", f)
		}
	}
	if len(pos) > 0 {
		return inv.c.Usagef(inv.stderr, "--print takes no argument (got %q)", pos[0])
	}
	text, err := matrix.EmbeddedText(name)
	if err != nil {
		return inv.c.Usagef(inv.stderr, "--print: %s", plain(err))
	}
	if _, err := io.WriteString(inv.stdout, text); err != nil {
		return inv.c.Errorf(inv.stderr, cli.ExitFail, "--print: %v", err)
	}
	return cli.ExitOK
}

// listSuites is --list, which takes no argument and no flag of a run.
func (inv *matrixInvocation) listSuites(pos []string) int {
	for _, f := range []string{"resume", "out", "json", "shard"} {
		if inv.set[f] {
			return inv.c.Usagef(inv.stderr, "--list takes no --%s", f)
		}
	}
	if len(pos) > 0 {
		return inv.c.Usagef(inv.stderr, "--list takes no argument (got %q)", pos[0])
	}
	return listSuites(inv.c, inv.stdout, inv.stderr)
}

// checkFlags refuses flags that do not go together or do not parse, and
// sets the shard, the lab mode and where the human text goes.
func (inv *matrixInvocation) checkFlags(pos []string) (int, bool) {
	c, stderr := inv.c, inv.stderr
	if len(pos) > 1 {
		return c.Usagef(stderr, "one suite or spec file at a time (got %d arguments)", len(pos)), true
	}
	if inv.set["resume"] && inv.set["out"] {
		return c.Usagef(stderr, "--resume DIR continues the run in DIR: no --out with it"), true
	}
	if inv.set["resume"] && inv.resume == "" {
		return c.Usagef(stderr, "--resume needs a run directory"), true
	}
	if inv.startTimeout <= 0 || inv.startTimeout > harness.MaxStartTimeout {
		return c.Usagef(stderr, "--start-timeout = %v (accepted: (0, %v])", inv.startTimeout, harness.MaxStartTimeout), true
	}
	shard, err := matrix.ParseShard(inv.shardText)
	if err != nil {
		return c.Usagef(stderr, "--shard: %s", plain(err)), true
	}
	inv.shard = shard
	mode, ok := labModes[inv.labMode]
	if !ok {
		return c.Usagef(stderr, "--lab %q (accepted: auto, on, off)", inv.labMode), true
	}
	inv.mode = mode
	inv.human = cli.HumanOut(inv.jsonOut, inv.stdout, inv.stderr)
	return 0, false
}

// resolveSpec finds the suite: as given (by default the default suite),
// or, resuming, as recorded.
func (inv *matrixInvocation) resolveSpec(pos []string) (int, bool) {
	if inv.resume != "" {
		return inv.recordedSpec(pos)
	}
	which := matrix.DefaultSuite
	if len(pos) == 1 {
		which = pos[0]
	}
	var err error
	inv.name, inv.source, inv.text, err = loadSuite(which)
	if err != nil {
		return inv.c.Usagef(inv.stderr, "%v", err), true
	}
	return 0, false
}

// recordedSpec is resolveSpec for --resume: the suite recorded in the run
// directory (a spec given must be the recorded one) and, unless the flags
// say otherwise, the shard, placement and lab mode it was made with (and
// then they must agree: CheckResume says so).
func (inv *matrixInvocation) recordedSpec(pos []string) (int, bool) {
	c, stderr := inv.c, inv.stderr
	inv.dir = inv.resume
	first, err := firstManifest(inv.dir)
	if err != nil {
		return c.Errorf(stderr, cli.ExitUsage, "--resume %s: %s", inv.dir, plain(err)), true
	}
	inv.source, inv.text = first.Spec.Source, first.Spec.Text
	inv.name = suiteName(inv.source)
	if len(pos) == 1 {
		n, s, t, err := loadSuite(pos[0])
		if err != nil {
			return c.Usagef(stderr, "%v", err), true
		}
		if t != inv.text {
			return c.Errorf(stderr, cli.ExitUsage, "--resume %s: cannot resume: it was run from %s, whose text differs from %s's: resume with the spec it was run with (or name none)",
				inv.dir, inv.source, s), true
		}
		inv.name, inv.source = n, s
	}
	sh := first.Shards[0]
	if !inv.set["shard"] {
		inv.shard = matrix.Shard{Index: sh.Index, Count: sh.Count}
	}
	if !inv.set["cpus"] {
		if err := inv.placement.Set(sh.Placement); err != nil {
			return c.Errorf(stderr, cli.ExitUsage, "--resume %s: recorded placement %q: %v", inv.dir, sh.Placement, err), true
		}
	}
	if !inv.set["lab"] {
		inv.mode = lab.Mode(sh.Mode)
	}
	return 0, false
}

// planJobs parses the suite's specs, chooses the run directory (--out, or
// a new one named after the suite and the time) and makes a job per spec:
// a suite's specs each in a subdirectory.
func (inv *matrixInvocation) planJobs([]string) (int, bool) {
	specs, err := matrix.ParseSuite([]byte(inv.text))
	if err != nil {
		return inv.refuseSpec(err), true
	}
	inv.specs = specs
	if inv.dir == "" {
		inv.dir = inv.out
	}
	if inv.dir == "" {
		inv.dir = filepath.Join("reactorlab-runs", "matrix-"+inv.name+"-"+time.Now().Format("20060102-150405"))
		if inv.shard.Count > 1 {
			inv.dir += fmt.Sprintf("-shard%dof%d", inv.shard.Index, inv.shard.Count)
		}
	}
	if inv.resume == "" {
		// A file where the run directory goes (or above it) is the
		// --out value's fault, as reactorlab run says of its own.
		if err := harness.CheckCellDir(inv.dir); errors.Is(err, syscall.ENOTDIR) {
			if inv.set["out"] {
				return inv.c.Usagef(inv.stderr, "--out %v (accepted: a new or empty directory)", err), true
			}
			return inv.c.Errorf(inv.stderr, cli.ExitUsage, "%v (accepted: a new or empty directory; choose one with --out)", err), true
		}
	}
	for _, spec := range specs {
		j := &matrixJob{spec: spec, dir: inv.dir}
		if len(specs) > 1 {
			j.dir = filepath.Join(inv.dir, spec.Name)
		}
		inv.jobs = append(inv.jobs, j)
	}
	return 0, false
}

// refuseSpec refuses the suite for err, ParseSuite's: each of its errors
// (one, or each of a matrix.Errors) on a line of its own, after the
// command's name and the suite's source; it returns cli.ExitUsage.
func (inv *matrixInvocation) refuseSpec(err error) int {
	all := []error{err}
	var many matrix.Errors
	if errors.As(err, &many) {
		all = many
	}
	for _, e := range all {
		inv.c.Errorf(inv.stderr, cli.ExitUsage, "%s: %s", inv.source, plain(e))
	}
	return cli.ExitUsage
}

// options are the matrix's options for job j.
func (inv *matrixInvocation) options(j *matrixJob) matrix.Options {
	return matrix.Options{
		Spec: j.spec, Source: inv.source, Text: inv.text, Dir: j.dir, Shard: inv.shard,
		Placement: inv.placement, DefaultPlacement: !inv.set["cpus"] && inv.resume == "", Mode: inv.mode, Grace: inv.grace, StartTimeout: inv.startTimeout, Resume: j.resume, Log: inv.stderr, RunCell: matrixRunCell,
	}
}

// refuseEarly refuses everything that can be refused before anything
// runs: every spec's targets and cells, the directory (with --resume, what
// planResume refuses).
func (inv *matrixInvocation) refuseEarly([]string) (int, bool) {
	c, stderr, dir := inv.c, inv.stderr, inv.dir
	for _, j := range inv.jobs {
		if err := matrix.Check(inv.options(j)); err != nil {
			if errors.Is(err, matrix.ErrTarget) {
				return c.Errorf(stderr, cli.ExitUsage, "%s: %s", inv.source, plain(err)), true
			}
			return c.Errorf(stderr, cli.ExitUsage, "%s: spec %s: %s", inv.source, j.spec.Name, plain(err)), true
		}
	}
	inv.resumeLine = resumeCommand(dir, inv.set, inv.jsonOut, inv.grace, inv.startTimeout)
	if inv.resume != "" {
		return planResume(c, stderr, dir, inv.jobs, inv.options)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		// A suite writes one subdirectory per spec: the directory itself
		// must be new or empty, so that no earlier result is mixed in.
		hint := ""
		if _, err := os.Stat(filepath.Join(dir, results.ManifestFile)); err == nil {
			hint = fmt.Sprintf("; to continue an interrupted run there: %s", inv.resumeLine)
		} else if subs, err := matrix.SuiteDirs(dir); err == nil && len(subs) > 0 {
			hint = fmt.Sprintf("; to continue an interrupted run there: %s", inv.resumeLine)
		}
		return c.Errorf(stderr, cli.ExitUsage, "%s: %s holds %s (accepted: a new or empty directory)%s", plain(matrix.ErrDirNotEmpty), dir, figure.Counted(len(ents), "entry", "entries"), hint), true
	}
	return 0, false
}

// checkStarts starts each distinct cmd target of the jobs still to run
// once (matrix.CheckStarts, the check conform makes), before any run: one
// that cannot be started is refused in run's words (startRefusalText) at
// the file, line and field that give it, exit 2; a signal meanwhile ends
// the command with 130, nothing run.
func (inv *matrixInvocation) checkStarts(ctx context.Context) (int, bool) {
	var opts []matrix.Options
	for _, j := range inv.jobs {
		if !j.done {
			opts = append(opts, inv.options(j))
		}
	}
	err := matrix.CheckStarts(ctx, opts...)
	var sr *matrix.StartRefusal
	switch {
	case err == nil:
		return 0, false
	case ctx.Err() != nil:
		return inv.c.Errorf(inv.stderr, cli.ExitInterrupted, "interrupted while starting the cmd targets: nothing was run"), true
	case errors.As(err, &sr):
		return inv.c.Errorf(inv.stderr, cli.ExitUsage, "%s: line %d: %s: %s", inv.source, sr.Line, sr.Field, startRefusalText(sr.Start)), true
	}
	return inv.c.Errorf(inv.stderr, cli.ExitFail, "%s", plain(err)), true
}

// announce prints what is about to run and its estimated time.
func (inv *matrixInvocation) announce() {
	var left time.Duration
	kept, planned := 0, 0
	for _, j := range inv.jobs {
		plan := j.spec.Plan(inv.shard)
		planned += len(plan)
		if j.done {
			kept += len(plan)
			continue
		}
		kept += j.kept
		left += matrix.EstimatePlan(plan[j.kept:])
	}
	if inv.resume != "" {
		fmt.Fprintf(inv.stderr, "reactorlab matrix: %s (%s), shard %s, %s: resuming %s, %d of %d planned runs kept, about %s\n",
			inv.name, inv.source, inv.shard, figure.Counted(len(inv.specs), "spec", "specs"), inv.dir, kept, planned, matrix.FormatEstimate(left))
	} else {
		fmt.Fprintf(inv.stderr, "reactorlab matrix: %s (%s), shard %s, %s, about %s; results in %s\n",
			inv.name, inv.source, inv.shard, figure.Counted(len(inv.specs), "spec", "specs"), matrix.FormatEstimate(left), inv.dir)
	}
}

// runJobs runs the jobs in order, reporting each, until one is
// interrupted or cannot finish (stopped). refused: a job was refused
// before it wrote anything, for a reason Check could not know; code is
// then the command's exit code.
func (inv *matrixInvocation) runJobs(ctx context.Context) (code int, stopped, refused bool) {
	c, stderr := inv.c, inv.stderr
	code = cli.ExitOK
	for _, j := range inv.jobs {
		if stopped {
			break
		}
		if j.done {
			fmt.Fprintf(stderr, "reactorlab matrix: %s: complete in %s, kept as it is\n", j.spec.Name, j.dir)
			continue
		}
		m, err := matrix.Run(ctx, inv.options(j))
		if m == nil {
			// Refused before it wrote anything: what Check could not
			// know (the directory was taken meanwhile), or it could not
			// write.
			if errors.Is(err, matrix.ErrDirNotEmpty) || errors.Is(err, matrix.ErrDirBusy) || errors.Is(err, matrix.ErrResume) {
				return c.Errorf(stderr, cli.ExitUsage, "%s: %s", j.spec.Name, plain(err)), stopped, true
			}
			c.Errorf(stderr, cli.ExitFail, "%s: %s", j.spec.Name, plain(err))
			code, stopped = cli.ExitFail, true
			break
		}
		// Whatever happened, what was measured is reported.
		if !inv.reportJob(j) {
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
	return code, stopped, false
}

// reportJob writes job j's reports and prints its summary; false if
// either failed (and it said so).
func (inv *matrixInvocation) reportJob(j *matrixJob) bool {
	if rerr := matrix.Render(j.dir); rerr != nil {
		inv.c.Errorf(inv.stderr, cli.ExitFail, "%s: reports: %v", j.spec.Name, rerr)
		return false
	}
	if perr := printRunSummary(inv.human, j.dir); perr != nil {
		inv.c.Errorf(inv.stderr, cli.ExitFail, "%s: %v", j.spec.Name, perr)
		return false
	}
	return true
}

// finish writes the JSON result and the last line (with the command that
// continues a stopped run, if it can be continued), and returns the exit
// code: code, or 130 if a signal came after the last job began.
func (inv *matrixInvocation) finish(ctx context.Context, code int, stopped bool, started time.Time) int {
	stderr, dir := inv.stderr, inv.dir
	if ctx.Err() != nil && code != cli.ExitInterrupted {
		// The signal came between two specs, or as the last one ended.
		code, stopped = cli.ExitInterrupted, true
	}
	result := matrixResult{Suite: inv.name, Source: inv.source, Dir: dir, Shard: inv.shard.String()}
	// --resume continues a run whose manifest was written: a matrix that
	// stopped before it wrote one has nothing to continue.
	resumable := false
	if stopped {
		_, err := firstManifest(dir)
		resumable = err == nil
		result.Interrupted = code == cli.ExitInterrupted
		if resumable {
			result.Resume = inv.resumeLine
		}
	}
	result.Complete = !stopped
	for _, j := range inv.jobs {
		result.Specs = append(result.Specs, specResultOf(j.spec, j.dir, inv.shard))
	}
	if inv.jsonOut != "" {
		if err := cli.WriteTo(inv.jsonOut, inv.stdout, result.write); err != nil {
			inv.c.Errorf(stderr, cli.ExitFail, "--json: %v", err)
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
		fmt.Fprintf(stderr, "reactorlab matrix: %s after %s; results so far in %s\nto continue: %s\n", what, time.Since(started).Round(time.Second), dir, inv.resumeLine)
		return code
	}
	fmt.Fprintf(stderr, "reactorlab matrix: done in %s; results in %s\n", time.Since(started).Round(time.Second), dir)
	return code
}

// plain is err's text without the package prefix a command's own name
// makes redundant ("matrix: "), so that what the command prints names
// the matrix once: every matrix package error it prints goes through
// here.
func plain(err error) string {
	return strings.TrimPrefix(err.Error(), "matrix: ")
}

// suiteName is the short name of a spec's source: the built-in suite's
// name, or the file's without .yaml.
func suiteName(source string) string {
	if n, ok := strings.CutPrefix(source, "embedded:"); ok {
		return n
	}
	return strings.TrimSuffix(strings.TrimSuffix(filepath.Base(source), ".yaml"), ".yml")
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

// loadSuite finds a suite: a built-in name, or a YAML file.
func loadSuite(which string) (name, source, text string, err error) {
	if !strings.ContainsAny(which, "/.") {
		text, err := matrix.EmbeddedText(which)
		if err != nil {
			return "", "", "", fmt.Errorf("%s, or a spec file (FILE.yaml)", plain(err))
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
		return c.Errorf(stderr, cli.ExitFail, "built-in suite %s: %s", e.Name, plain(err))
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nTIME is estimated for 2 cores: each run's warm-up and duration, plus its measured overhead.")
	return cli.ExitOK
}
