//go:build linux

package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/matrix"
	"github.com/reactorlab/reactorlab/results"
)

const compareSynopsis = "reactorlab compare OLD NEW [--threshold 10%] [--metrics m1,m2] [--require-all] [--json FILE|-]"

const compareDescription = `Compares two matrix run directories, the CI gate: OLD and NEW each hold one
spec's runs, or a suite's (one subdirectory per spec, matched by name).
Cells are matched by ID and configuration; for each headline metric (or
--metrics) the old valid runs are tested against the new (two-sided
Mann-Whitney U, Holm-adjusted over the whole table). The table goes to
stdout (to stderr with --json -) and lists what was not compared: specs or
cells on one side only, cells whose configuration differs, cells or
metrics without values on both sides. A regression is a significant change
in the bad direction beyond --threshold, a cell whose runs stopped being
valid, or an integrity anomaly. Exit 0: no regression in what was
compared; 1: a regression, or with --require-all anything not compared or
a compared cell where the gate cannot fire; 2: bad arguments or
directories, nothing could be compared (unrelated runs: the message names
both sides' specs and cells and what did not match), or nothing was
judged (the gate cannot fire in any compared cell: too few valid runs a
side); --json still writes the comparison.`

// compareCmd is `reactorlab compare OLD NEW`: the CI gate. The comparison
// is results.CompareRuns'; this only reads the directories, picks the
// outputs and maps the outcome to the exit code.
func compareCmd(args []string, stdout, stderr io.Writer) int {
	c := cli.New("reactorlab compare", compareSynopsis, compareDescription)
	threshold := c.Flags.String("threshold", "10%", "smallest relative `CHANGE` of a metric, in its bad direction, that counts as a regression: a percentage (5%) or a fraction up to 1 (0.05)")
	metricList := c.Flags.String("metrics", "", "comma-separated `METRICS` to judge (default: the headline metrics: "+strings.Join(gateMetrics(), ",")+")")
	requireAll := c.Flags.Bool("require-all", false, "exit 1 when any spec, cell or metric could not be compared, or a compared cell has too few valid runs for the gate to fire, even without a regression")
	jsonOut := c.Flags.String("json", "", "also write the comparison as JSON to `FILE`; - writes it alone on stdout, and the table on stderr")
	pos, done, code := c.Parse(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 2 {
		return c.Usagef(stderr, "want OLD and NEW run directories (got %d arguments)", len(pos))
	}
	th, err := parseThreshold(*threshold)
	if err != nil {
		return c.Usagef(stderr, "--threshold %v", err)
	}
	opt := results.CompareOptions{Threshold: th}
	if *metricList != "" {
		for _, name := range strings.Split(*metricList, ",") {
			name = strings.TrimSpace(name)
			if _, ok := results.MetricByName(name); !ok {
				var all []string
				for _, m := range results.Metrics {
					all = append(all, m.Name)
				}
				return c.Usagef(stderr, "--metrics: unknown metric %q (accepted: %s)", name, strings.Join(all, ", "))
			}
			opt.Metrics = append(opt.Metrics, name)
		}
	}
	oldDir, newDir := pos[0], pos[1]
	oldSpecs, err := readSpecRuns(oldDir)
	if err != nil {
		return c.Usagef(stderr, "OLD: %v", err)
	}
	newSpecs, err := readSpecRuns(newDir)
	if err != nil {
		return c.Usagef(stderr, "NEW: %v", err)
	}
	rc, err := results.CompareRuns(oldDir, oldSpecs, newDir, newSpecs, opt)
	if err != nil {
		return c.Usagef(stderr, "%v", err)
	}

	human := cli.HumanOut(*jsonOut, stdout, stderr)
	if *jsonOut != "" {
		if err := cli.WriteTo(*jsonOut, stdout, rc.WriteJSON); err != nil {
			return c.Errorf(stderr, cli.ExitFail, "--json: %v", err)
		}
	}
	outcome := rc.Outcome()
	if outcome == results.OutcomeNothingCompared {
		return c.Errorf(stderr, cli.ExitUsage, "%s", rc.NothingComparedText())
	}
	if err := rc.WriteTable(human); err != nil {
		return c.Errorf(stderr, cli.ExitFail, "%v", err)
	}
	switch {
	case outcome == results.OutcomeRegression:
		return cli.ExitFail
	case outcome == results.OutcomeNothingJudged:
		return c.Errorf(stderr, cli.ExitUsage, "%s", rc.NothingJudgedText())
	case outcome == results.OutcomeIncomplete && *requireAll:
		return c.Errorf(stderr, cli.ExitFail, "--require-all: not everything was compared (%s; listed under \"not compared\")", rc.NotComparedText())
	case len(rc.CannotFire()) > 0 && *requireAll:
		return c.Errorf(stderr, cli.ExitFail, "--require-all: the gate cannot fire for %s: too few valid runs a side for any change to be significant (the table's WARNING says how many are needed)", strings.Join(rc.CannotFire(), ", "))
	}
	return cli.ExitOK
}

// readSpecRuns reads the manifests of a run directory: its own (Sub "") or
// each suite subdirectory's.
func readSpecRuns(dir string) ([]results.SpecRun, error) {
	subs, err := matrix.SuiteDirs(dir)
	if err != nil {
		return nil, err
	}
	var out []results.SpecRun
	for _, sub := range subs {
		m, err := results.ReadManifest(filepath.Join(dir, sub))
		if err != nil {
			return nil, err
		}
		if sub == "." {
			sub = ""
		}
		out = append(out, results.SpecRun{Sub: sub, Manifest: m})
	}
	return out, nil
}

func gateMetrics() []string {
	var out []string
	for _, m := range results.Metrics {
		if m.Gate {
			out = append(out, m.Name)
		}
	}
	return out
}

// parseThreshold reads "10%" or "0.1": a fraction in (0, 10] with "%",
// in (0, 1] without (a bare "5" is refused: 5% or 500%?).
func parseThreshold(s string) (float64, error) {
	text, percent := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(text, 64)
	if err == nil && !percent && v > 1 {
		return 0, fmt.Errorf("%q: a fraction above 1 (%v%%) is more likely a percentage without its sign: write %s%% (or %v for %v%%)", s, v*100, text, v/100, v)
	}
	if percent {
		v /= 100
	}
	if err != nil || !(v > 0 && v <= 10) {
		return 0, fmt.Errorf("%q (accepted: a relative change such as 5%% or 0.05, above 0, at most 1000%%)", s)
	}
	return v, nil
}
