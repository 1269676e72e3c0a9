package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// SpecRun is one spec's runs on one side of CompareRuns: Sub is its
// subdirectory in a suite's run directory, or "" for a run directory given
// directly (one spec).
type SpecRun struct {
	Sub      string
	Manifest *Manifest
}

// RunComparison is two run directories compared spec by spec (Compare for
// each spec both hold) — the CI gate of `reactorlab compare OLD NEW`. A run
// directory holds one spec, or a suite's specs in one subdirectory each;
// two suites' specs are matched by subdirectory, a single spec against a
// suite by its name, and two single specs with each other whatever their
// names (their cells are then matched by ID and configuration). Every spec
// of either side is in exactly one of Specs, SpecsOnlyOld and SpecsOnlyNew.
type RunComparison struct {
	// Old and New are the directories as given.
	Old, New         string
	Threshold, Alpha float64
	Metrics          []string
	// Specs are the specs both sides hold, sorted by Spec.
	Specs []SpecComparison
	// SpecsOnlyOld and SpecsOnlyNew are the specs one side holds only,
	// sorted: not compared.
	SpecsOnlyOld, SpecsOnlyNew []string
	// oldSpecs and newSpecs describe each side, for NothingComparedText.
	oldSpecs, newSpecs []specSide
}

// SpecComparison is one spec's comparison. Spec is its subdirectory (or,
// against a suite, its name); "" when two run directories of one spec each
// were compared.
type SpecComparison struct {
	Spec string
	*Comparison
}

type specSide struct {
	key, name, commit string
	cells             []string
}

// Outcome is a RunComparison's verdict, from which the gate's exit code
// follows.
type Outcome string

// The outcomes, in order of precedence.
const (
	// OutcomeNothingCompared: no cell of any spec was compared (unrelated
	// runs); no verdict can be given.
	OutcomeNothingCompared Outcome = "nothing_compared"
	// OutcomeRegression: at least one regression.
	OutcomeRegression Outcome = "regression"
	// OutcomeNothingJudged: cells were compared and none regressed, but
	// the gate cannot fire in any of them (CannotFire lists every compared
	// cell): no regression could have been found, so no verdict is given.
	OutcomeNothingJudged Outcome = "nothing_judged"
	// OutcomeIncomplete: no regression in what was compared, but some
	// spec, cell or metric was not compared.
	OutcomeIncomplete Outcome = "incomplete"
	// OutcomeNoRegression: everything was compared, and nothing regressed.
	OutcomeNoRegression Outcome = "no_regression"
)

// CompareRuns compares the old side's specs with the new side's (see
// RunComparison for how they are matched), each with Compare and opt. It
// returns an error for bad options, a side without a spec or with a nil
// manifest, or two specs of one side under one key.
func CompareRuns(oldDir string, old []SpecRun, newDir string, new []SpecRun, opt CompareOptions) (*RunComparison, error) {
	if len(old) == 0 || len(new) == 0 {
		return nil, errors.New("compare: a side has no spec")
	}
	rc := &RunComparison{Old: oldDir, New: newDir}
	direct := len(old) == 1 && len(new) == 1 && (old[0].Sub == "" || new[0].Sub == "")
	oldBy, err := bySpec(old, direct, &rc.oldSpecs)
	if err != nil {
		return nil, fmt.Errorf("compare: OLD %s: %w", oldDir, err)
	}
	newBy, err := bySpec(new, direct, &rc.newSpecs)
	if err != nil {
		return nil, fmt.Errorf("compare: NEW %s: %w", newDir, err)
	}
	for _, key := range sortedKeys(oldBy) {
		nm, ok := newBy[key]
		if !ok {
			rc.SpecsOnlyOld = append(rc.SpecsOnlyOld, key)
			continue
		}
		oldRun := oldBy[key]
		c, err := Compare(oldRun.Manifest, nm.Manifest, opt)
		if err != nil {
			return nil, err
		}
		c.addIntervals(filepath.Join(oldDir, oldRun.Sub), oldRun.Manifest, filepath.Join(newDir, nm.Sub), nm.Manifest)
		rc.Specs = append(rc.Specs, SpecComparison{Spec: key, Comparison: c})
	}
	for _, key := range sortedKeys(newBy) {
		if _, ok := oldBy[key]; !ok {
			rc.SpecsOnlyNew = append(rc.SpecsOnlyNew, key)
		}
	}
	if len(rc.Specs) > 0 {
		c := rc.Specs[0]
		rc.Threshold, rc.Alpha, rc.Metrics = c.Threshold, c.Alpha, c.Metrics
	} else {
		// Validate the options all the same, and say what they were.
		c, err := Compare(&Manifest{}, &Manifest{}, opt)
		if err != nil {
			return nil, err
		}
		rc.Threshold, rc.Alpha, rc.Metrics = c.Threshold, c.Alpha, c.Metrics
	}
	return rc, nil
}

// bySpec keys a side's specs: "" for a direct comparison, else the
// subdirectory or, for a run directory given directly, the spec's name.
func bySpec(specs []SpecRun, direct bool, sides *[]specSide) (map[string]SpecRun, error) {
	out := map[string]SpecRun{}
	for _, s := range specs {
		if s.Manifest == nil {
			return nil, fmt.Errorf("spec %q: no manifest", s.Sub)
		}
		key := s.Sub
		switch {
		case direct:
			key = ""
		case key == "":
			key = s.Manifest.Spec.Name
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("two specs under %q", key)
		}
		out[key] = s
		side := specSide{key: key, name: s.Manifest.Spec.Name, commit: s.Manifest.Tool.Commit}
		for _, c := range s.Manifest.Cells {
			side.cells = append(side.cells, c.ID)
		}
		*sides = append(*sides, side)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Regressions counts the regressions of every spec.
func (rc *RunComparison) Regressions() int {
	n := 0
	for _, s := range rc.Specs {
		n += s.Regressions()
	}
	return n
}

// ComparedCells counts the cells compared, over every spec.
func (rc *RunComparison) ComparedCells() int {
	n := 0
	for _, s := range rc.Specs {
		n += len(s.Compared)
	}
	return n
}

// NotComparedCounts counts what was not compared: specs on one side only,
// cells and metrics (Comparison.NotComparedCounts) over every spec.
func (rc *RunComparison) NotComparedCounts() (specs, cells, metrics int) {
	specs = len(rc.SpecsOnlyOld) + len(rc.SpecsOnlyNew)
	for _, s := range rc.Specs {
		c, m := s.NotComparedCounts()
		cells += c
		metrics += m
	}
	return specs, cells, metrics
}

// CannotFire lists the compared cells, as "SPEC/CELL" (just CELL for a
// lone spec), where the gate cannot fire: too few valid runs a side for
// any change to be significant (Comparison.CannotFire).
func (rc *RunComparison) CannotFire() []string {
	var out []string
	for _, s := range rc.Specs {
		for _, cell := range s.CannotFire {
			if s.Spec != "" {
				cell = s.Spec + "/" + cell
			}
			out = append(out, cell)
		}
	}
	return out
}

// NotComparedText is NotComparedCounts in words: "1 spec, 2 cells, 1
// metric", zero counts left out ("" when everything was compared).
func (rc *RunComparison) NotComparedText() string { return notComparedText(rc.NotComparedCounts()) }

// Outcome is the verdict: OutcomeNothingCompared when no cell was
// compared, else OutcomeRegression when any regressed, else
// OutcomeNothingJudged when the gate cannot fire in any compared cell,
// else OutcomeIncomplete when anything was not compared, else
// OutcomeNoRegression.
func (rc *RunComparison) Outcome() Outcome {
	specs, cells, metrics := rc.NotComparedCounts()
	switch {
	case rc.ComparedCells() == 0:
		return OutcomeNothingCompared
	case rc.Regressions() > 0:
		return OutcomeRegression
	case len(rc.CannotFire()) == rc.ComparedCells():
		return OutcomeNothingJudged
	case specs+cells+metrics > 0:
		return OutcomeIncomplete
	}
	return OutcomeNoRegression
}

// Summary is the verdict in one line, as the table's last line: the
// regressions and what was not compared ("1 regression beyond ±10%; not
// compared: 1 spec, 2 cells"), NothingJudgedText, or
// NothingComparedText's first line.
func (rc *RunComparison) Summary() string {
	switch rc.Outcome() {
	case OutcomeNothingCompared:
		return strings.SplitN(rc.NothingComparedText(), "\n", 2)[0]
	case OutcomeNothingJudged:
		return rc.NothingJudgedText()
	}
	s := regressionsText(rc.Regressions(), rc.Threshold)
	if nc := rc.NotComparedText(); nc != "" {
		s += "; not compared: " + nc
	}
	return s
}

// NothingJudgedText says, when cells were compared but the gate cannot
// fire in any of them (OutcomeNothingJudged), that nothing was judged,
// naming the cells; "" otherwise.
func (rc *RunComparison) NothingJudgedText() string {
	if rc.Outcome() != OutcomeNothingJudged {
		return ""
	}
	return nothingJudgedText(rc.CannotFire())
}

// NothingComparedText explains, when no cell was compared, why: a first
// line saying so, then one indented line per side (its specs, their
// commits and cells) and one per spec or cell that did not match, and why
// (only on one side, configuration differs, no values on both sides). It
// is "" when something was compared.
func (rc *RunComparison) NothingComparedText() string {
	if rc.ComparedCells() > 0 {
		return ""
	}
	var b strings.Builder
	if len(rc.Specs) == 0 {
		b.WriteString("nothing compared: OLD and NEW hold no spec in common")
	} else {
		b.WriteString("nothing compared: no cell is in OLD and NEW with the same configuration and values on both sides")
	}
	for _, side := range []struct {
		label, dir string
		specs      []specSide
	}{{"OLD", rc.Old, rc.oldSpecs}, {"NEW", rc.New, rc.newSpecs}} {
		for _, s := range side.specs {
			fmt.Fprintf(&b, "\n  %s %s", side.label, side.dir)
			if s.key != "" {
				fmt.Fprintf(&b, " (%s)", s.key)
			}
			fmt.Fprintf(&b, ": spec %q, %s, cells %s", s.name, shortCommit(s.commit), strings.Join(s.cells, ", "))
		}
	}
	for _, key := range rc.SpecsOnlyOld {
		fmt.Fprintf(&b, "\n  spec %s: only in OLD", key)
	}
	for _, key := range rc.SpecsOnlyNew {
		fmt.Fprintf(&b, "\n  spec %s: only in NEW", key)
	}
	for _, s := range rc.Specs {
		prefix := ""
		if s.Spec != "" {
			prefix = s.Spec + ": "
		}
		for _, nc := range s.NotCompared {
			fmt.Fprintf(&b, "\n  %s%s: %s", prefix, nc.Cell, nc.Reason)
		}
	}
	return b.String()
}

// WriteTable writes each spec's table (Comparison.WriteTable), under a
// "## SPEC" heading for a suite's, then the specs on one side only, and,
// for a suite, the verdict over all its specs (Summary) as the last line.
func (rc *RunComparison) WriteTable(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, s := range rc.Specs {
		if s.Spec != "" {
			fmt.Fprintf(ew, "## %s\n\n", s.Spec)
		}
		if err := s.WriteTable(ew); err != nil {
			return err
		}
		fmt.Fprintln(ew)
	}
	if len(rc.SpecsOnlyOld)+len(rc.SpecsOnlyNew) > 0 {
		fmt.Fprintf(ew, "specs not compared:\n")
		for _, key := range rc.SpecsOnlyOld {
			fmt.Fprintf(ew, "  %s: only in the old runs (%s)\n", key, rc.Old)
		}
		for _, key := range rc.SpecsOnlyNew {
			fmt.Fprintf(ew, "  %s: only in the new runs (%s)\n", key, rc.New)
		}
		fmt.Fprintln(ew)
	}
	if len(rc.Specs) != 1 || rc.Specs[0].Spec != "" || len(rc.SpecsOnlyOld)+len(rc.SpecsOnlyNew) > 0 {
		fmt.Fprintf(ew, "all specs: %s\n", rc.Summary())
	}
	return ew.err
}

// The JSON document of WriteJSON. Its field names are stable.
type (
	runJSON struct {
		Old          string     `json:"old"`
		New          string     `json:"new"`
		Threshold    float64    `json:"threshold"`
		Alpha        float64    `json:"alpha"`
		Metrics      []string   `json:"metrics"`
		Outcome      Outcome    `json:"outcome"`
		Summary      string     `json:"summary"`
		Regressions  int        `json:"regressions"`
		Compared     int        `json:"compared_cells"`
		NotCompared  int        `json:"not_compared"`
		SpecsOnlyOld []string   `json:"specs_only_old"`
		SpecsOnlyNew []string   `json:"specs_only_new"`
		Specs        []specJSON `json:"specs"`
	}
	specJSON struct {
		Spec        string            `json:"spec"`
		OldSpec     string            `json:"old_spec"`
		NewSpec     string            `json:"new_spec"`
		OldCommit   string            `json:"old_commit"`
		NewCommit   string            `json:"new_commit"`
		Summary     string            `json:"summary"`
		Regressions int               `json:"regressions"`
		Compared    []string          `json:"compared_cells"`
		NotCompared []notComparedJSON `json:"not_compared"`
		Rows        []rowJSON         `json:"rows"`
		Failures    []failureJSON     `json:"failures"`
		Notes       []string          `json:"notes"`
		CannotFire  []string          `json:"cannot_fire"`
	}
	rowJSON struct {
		Cell       string   `json:"cell"`
		Metric     string   `json:"metric"`
		Tested     bool     `json:"tested"`
		OldN       int      `json:"old_n"`
		NewN       int      `json:"new_n"`
		OldMedian  *float64 `json:"old_median"`
		NewMedian  *float64 `json:"new_median"`
		Ratio      *float64 `json:"ratio"`
		P          *float64 `json:"p"`
		PAdjusted  *float64 `json:"p_adjusted"`
		Verdict    Verdict  `json:"verdict"`
		Regression bool     `json:"regression"`
		Intervals  string   `json:"intervals,omitempty"`
	}
	notComparedJSON struct {
		Cell    string             `json:"cell"`
		Metric  string             `json:"metric,omitempty"`
		Why     NotComparedReason  `json:"why"`
		Reason  string             `json:"reason"`
		Changes []configChangeJSON `json:"changes,omitempty"`
	}
	configChangeJSON struct {
		Key string  `json:"key"`
		Old *string `json:"old"`
		New *string `json:"new"`
	}
	failureJSON struct {
		Cell   string `json:"cell"`
		Reason string `json:"reason"`
	}
)

// WriteJSON writes the comparison as one indented JSON object: the
// directories, threshold, alpha and metrics; the outcome, the summary
// line, the number of regressions, of cells compared and of things not
// compared (specs, cells and metrics); the specs on one side only; and per
// spec, its cells compared, the cells where the gate cannot fire, what was
// not compared (cell, metric for a
// one-sided metric, why, the reason in words, the configuration changes
// with null for an absent key), every row (a median, ratio or p-value
// that does not exist is null; a latency percentile's row says whether the
// two sides' merged 95% intervals overlap or lie apart), the failures and
// the notes. Lists are never null.
func (rc *RunComparison) WriteJSON(w io.Writer) error {
	specs, cells, metrics := rc.NotComparedCounts()
	doc := runJSON{
		Old: rc.Old, New: rc.New, Threshold: rc.Threshold, Alpha: rc.Alpha, Metrics: nonNil(rc.Metrics),
		Outcome: rc.Outcome(), Summary: rc.Summary(), Regressions: rc.Regressions(), Compared: rc.ComparedCells(),
		NotCompared: specs + cells + metrics, SpecsOnlyOld: nonNil(rc.SpecsOnlyOld), SpecsOnlyNew: nonNil(rc.SpecsOnlyNew),
		Specs: []specJSON{},
	}
	for _, s := range rc.Specs {
		sj := specJSON{Spec: s.Spec, OldSpec: s.OldSpec, NewSpec: s.NewSpec, OldCommit: s.OldCommit, NewCommit: s.NewCommit,
			Summary: s.Summary(), Regressions: s.Regressions(), Compared: nonNil(s.Compared), NotCompared: []notComparedJSON{},
			Rows: []rowJSON{}, Failures: []failureJSON{}, Notes: nonNil(s.Notes), CannotFire: nonNil(s.CannotFire)}
		for _, nc := range s.NotCompared {
			nj := notComparedJSON{Cell: nc.Cell, Metric: nc.Metric, Why: nc.Why, Reason: nc.Reason}
			for _, ch := range nc.Changes {
				nj.Changes = append(nj.Changes, configChangeJSON{ch.Key, ch.Old, ch.New})
			}
			sj.NotCompared = append(sj.NotCompared, nj)
		}
		for _, r := range s.Rows {
			rj := rowJSON{Cell: r.Cell, Metric: r.Metric, Tested: r.Tested, OldN: r.OldN, NewN: r.NewN, Verdict: r.Verdict, Regression: r.Regression, Intervals: r.Intervals}
			if r.OldN > 0 {
				rj.OldMedian = &r.OldMedian
			}
			if r.NewN > 0 {
				rj.NewMedian = &r.NewMedian
			}
			if r.Ratio != 0 {
				rj.Ratio = &r.Ratio
			}
			if r.Tested {
				rj.P, rj.PAdjusted = &r.P, &r.PAdjusted
			}
			sj.Rows = append(sj.Rows, rj)
		}
		for _, f := range s.Failures {
			sj.Failures = append(sj.Failures, failureJSON{f.Cell, f.Reason})
		}
		doc.Specs = append(doc.Specs, sj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
