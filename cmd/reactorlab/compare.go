//go:build linux

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/reactorlab/reactorlab/matrix"
	"github.com/reactorlab/reactorlab/results"
)

// compareCmd is `reactorlab compare OLD NEW`: the CI gate.
func compareCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("reactorlab compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: reactorlab compare OLD NEW [flags]\n\n"+
			"Compares two run directories of the same spec (or suite), cell by cell, and\n"+
			"prints a regression table. Exit 0: no significant regression beyond the\n"+
			"threshold; 1: at least one; 2: bad arguments or directories.")
		fs.PrintDefaults()
	}
	threshold := fs.String("threshold", "10%", "smallest relative change that counts as a regression, e.g. 5% or 0.05")
	metricList := fs.String("metrics", "", "comma-separated metrics to judge (default: the headline metrics: "+strings.Join(gateMetrics(), ",")+")")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	refuse := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "reactorlab compare: "+format+"\n", a...)
		return exitUsage
	}
	if len(pos) != 2 {
		return refuse("want OLD and NEW run directories (got %d arguments)", len(pos))
	}
	th, err := parseThreshold(*threshold)
	if err != nil {
		return refuse("--threshold: %v", err)
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
				return refuse("--metrics: unknown metric %q (accepted: %s)", name, strings.Join(all, ", "))
			}
			opt.Metrics = append(opt.Metrics, name)
		}
	}
	oldDir, newDir := pos[0], pos[1]
	oldSubs, err := matrix.SuiteDirs(oldDir)
	if err != nil {
		return refuse("OLD: %v", err)
	}
	newSubs, err := matrix.SuiteDirs(newDir)
	if err != nil {
		return refuse("NEW: %v", err)
	}
	if strings.Join(oldSubs, ",") != strings.Join(newSubs, ",") {
		return refuse("OLD holds specs [%s], NEW [%s]: not runs of the same suite", strings.Join(oldSubs, " "), strings.Join(newSubs, " "))
	}
	regressions := 0
	for _, sub := range oldSubs {
		om, err := results.ReadManifest(filepath.Join(oldDir, sub))
		if err != nil {
			return refuse("%v", err)
		}
		nm, err := results.ReadManifest(filepath.Join(newDir, sub))
		if err != nil {
			return refuse("%v", err)
		}
		c, err := results.Compare(om, nm, opt)
		if err != nil {
			return refuse("%s: %v", sub, err)
		}
		if len(oldSubs) > 1 {
			fmt.Fprintf(stdout, "## %s\n\n", sub)
		}
		if err := c.WriteTable(stdout); err != nil {
			fmt.Fprintf(stderr, "reactorlab compare: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout)
		regressions += c.Regressions()
	}
	if regressions > 0 {
		return 1
	}
	return 0
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

// parseThreshold reads "10%" or "0.1": a fraction in (0, 10].
func parseThreshold(s string) (float64, error) {
	text, percent := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(text, 64)
	if percent {
		v /= 100
	}
	if err != nil || !(v > 0 && v <= 10) {
		return 0, fmt.Errorf("%q (accepted: a relative change such as 5%% or 0.05, above 0)", s)
	}
	return v, nil
}

