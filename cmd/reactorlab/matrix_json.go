//go:build linux

package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/reactorlab/reactorlab/matrix"
	"github.com/reactorlab/reactorlab/results"
)

// matrixResult is what matrix, merge and report write with --json: the run
// directory and, for each spec, its runs and the analysis its summary.json
// holds.
type matrixResult struct {
	// Suite is the suite's or spec file's short name, Source where its
	// text came from ("embedded:quick", a file).
	Suite  string `json:"suite"`
	Source string `json:"source"`
	// Dir is the run directory; a suite's specs are in subdirectories.
	Dir   string `json:"dir"`
	Shard string `json:"shard,omitempty"`
	// Complete: every spec's plan ran to its end. Interrupted: SIGINT or
	// SIGTERM stopped the matrix. Resume is the command that continues a
	// matrix that stopped (interrupted, or on an error) after it wrote a
	// manifest; "" when it did not stop, or had recorded nothing.
	Complete    bool         `json:"complete"`
	Interrupted bool         `json:"interrupted"`
	Resume      string       `json:"resume,omitempty"`
	Specs       []specResult `json:"specs"`
}

// specResult is one spec of a matrixResult.
type specResult struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
	// Planned runs (of the shards the directory holds), Runs recorded,
	// Invalid among them.
	Planned int `json:"planned"`
	Runs    int `json:"runs"`
	Invalid int `json:"invalid"`
	// Resumed lists each continuation of an interrupted run.
	Resumed []results.Resume `json:"resumed,omitempty"`
	// Summary is the spec's summary.json (results.Analysis) as written;
	// null when the spec has not run.
	Summary json.RawMessage `json:"summary"`

	source string
}

// specResultOf describes the spec run in dir: spec and shard give the
// plan when the spec is known (matrix), else it is read from the
// manifest's text and shards (merge, report).
func specResultOf(spec *matrix.Spec, dir string, sh matrix.Shard) specResult {
	r := specResult{Dir: dir, Summary: json.RawMessage("null")}
	if spec != nil {
		r.Name = spec.Name
		r.Planned = len(spec.Plan(sh))
	}
	m, err := results.ReadManifest(dir)
	if err != nil {
		return r
	}
	r.Name, r.source = m.Spec.Name, m.Spec.Source
	r.Runs, r.Invalid = len(m.Runs), countInvalid(m)
	for _, s := range m.Shards {
		r.Resumed = append(r.Resumed, s.Resumed...)
	}
	if spec == nil {
		if specs, err := matrix.ParseSuite([]byte(m.Spec.Text)); err == nil {
			for _, s := range specs {
				if s.Name != m.Spec.Name {
					continue
				}
				for _, shard := range m.Shards {
					r.Planned += len(s.Plan(matrix.Shard{Index: shard.Index, Count: shard.Count}))
				}
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, results.AnalysisFile)); err == nil && json.Valid(b) {
		r.Summary = json.RawMessage(b)
	}
	return r
}

// write writes r as indented JSON.
func (r matrixResult) write(w io.Writer) error {
	if r.Specs == nil {
		r.Specs = []specResult{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
