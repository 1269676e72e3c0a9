//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/internal/cli"
	"github.com/reactorlab/reactorlab/matrix"
	"github.com/reactorlab/reactorlab/results"
)

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

// resumeCommand is the command line that continues the run in dir: the
// flags that are not recorded in its manifest, as given.
func resumeCommand(dir string, set map[string]bool, jsonOut string, grace, startTimeout time.Duration) string {
	line := "reactorlab matrix --resume " + shellQuote(dir)
	if jsonOut != "" {
		line += " --json " + shellQuote(jsonOut)
	}
	if set["grace"] {
		line += " --grace " + grace.String()
	}
	if set["start-timeout"] {
		line += " --start-timeout " + startTimeout.String()
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
