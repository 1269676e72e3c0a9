//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/matrix"
	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/figure"
)

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
	human := cli.HumanOut(*jsonOut, stdout, stderr)
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
		fmt.Fprintf(human, "merged %s, %s of %s into %s\n", figure.Counted(len(m.Shards), "shard", "shards"), figure.Counted(len(m.Runs), "run", "runs"), m.Spec.Name, to)
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
