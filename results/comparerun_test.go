package results_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/results"
)

// TestCompareRunsMatchesSpecs: two suites are matched by subdirectory, the
// specs on one side only are listed; two single run directories are
// compared whatever their specs' names; a single spec against a suite by
// its name.
func TestCompareRunsMatchesSpecs(t *testing.T) {
	a := synthManifest("a", 6, compareFactors, noisy(101, typicalMeans, 0.03, nil))
	b := synthManifest("b", 6, compareFactors, noisy(102, typicalMeans, 0.03, nil))
	c := synthManifest("c", 6, compareFactors, noisy(103, typicalMeans, 0.03, nil))

	rc, err := results.CompareRuns("old", []results.SpecRun{{"a", a}, {"b", b}}, "new", []results.SpecRun{{"b", b}, {"c", c}, {"a", a}}, results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range rc.Specs {
		keys = append(keys, s.Spec)
	}
	if strings.Join(keys, ",") != "a,b" || len(rc.SpecsOnlyOld) != 0 || strings.Join(rc.SpecsOnlyNew, ",") != "c" {
		t.Errorf("specs %q, only old %q, only new %q", keys, rc.SpecsOnlyOld, rc.SpecsOnlyNew)
	}
	if rc.Outcome() != results.OutcomeIncomplete || rc.ComparedCells() != 6 {
		t.Errorf("outcome %s, %d cells compared", rc.Outcome(), rc.ComparedCells())
	}
	var buf bytes.Buffer
	if err := rc.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "## a\n") || !strings.Contains(out, "## b\n") || !strings.Contains(out, "  c: only in the new runs (new)\n") ||
		lastLine(out) != "all specs: no significant regression beyond ±10%; not compared: 1 spec" {
		t.Errorf("table:\n%s", out)
	}

	// Two run directories given directly: compared, names aside.
	rc, err = results.CompareRuns("old", []results.SpecRun{{"", a}}, "new", []results.SpecRun{{"", b}}, results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Specs) != 1 || rc.Specs[0].Spec != "" || rc.Outcome() != results.OutcomeNoRegression {
		t.Errorf("direct: %d specs, outcome %s", len(rc.Specs), rc.Outcome())
	}
	buf.Reset()
	rc.WriteTable(&buf)
	if strings.Contains(buf.String(), "## ") || strings.Contains(buf.String(), "all specs:") {
		t.Errorf("direct comparison with suite headings:\n%s", buf.String())
	}

	// A single spec against a suite: by its name.
	rc, err = results.CompareRuns("old", []results.SpecRun{{"", b}}, "new", []results.SpecRun{{"a", a}, {"b", b}}, results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.Specs) != 1 || rc.Specs[0].Spec != "b" || strings.Join(rc.SpecsOnlyNew, ",") != "a" {
		t.Errorf("single against suite: %+v", rc)
	}

	for _, bad := range [][2][]results.SpecRun{
		{nil, {{"a", a}}},
		{{{"a", a}, {"a", b}}, {{"a", a}}},
		{{{"a", nil}}, {{"a", a}}},
	} {
		if _, err := results.CompareRuns("old", bad[0], "new", bad[1], results.CompareOptions{}); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := results.CompareRuns("old", []results.SpecRun{{"a", a}}, "new", []results.SpecRun{{"c", c}}, results.CompareOptions{Threshold: -1}); err == nil {
		t.Errorf("bad threshold, no spec in common: no error")
	}
}

// TestCompareRunsNothingCompared: unrelated runs give OutcomeNothingCompared
// and a text naming both sides' specs and cells and what did not match.
func TestCompareRunsNothingCompared(t *testing.T) {
	a := synthManifest("alpha", 4, []synthCell{{"hot", "16"}}, noisy(111, typicalMeans, 0.03, nil))
	b := synthManifest("beta", 4, []synthCell{{"reactor", "et"}}, noisy(112, typicalMeans, 0.03, nil))
	b.Cells[0].Config = map[string]string{"reactor": "lt", "hot": "8", "callback": "0", "budgets": "budget-input=16"}
	rc, err := results.CompareRuns("old", []results.SpecRun{{"", a}}, "new", []results.SpecRun{{"", b}}, results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Outcome() != results.OutcomeNothingCompared {
		t.Fatalf("outcome %s", rc.Outcome())
	}
	text := rc.NothingComparedText()
	for _, want := range []string{
		"nothing compared: no cell is in OLD and NEW with the same configuration and values on both sides\n",
		`OLD old: spec "alpha", commit 0123456789ab, cells baseline, hot=16`,
		`NEW new: spec "beta", commit 0123456789ab, cells baseline, reactor=et`,
		"  hot=16: only in the old runs", "  reactor=et: only in the new runs", `  baseline: configuration differs: hot "4" → "8"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	if rc.Summary() != strings.Split(text, "\n")[0] {
		t.Errorf("summary %q", rc.Summary())
	}

	// Suites without a spec in common.
	rc, err = results.CompareRuns("old", []results.SpecRun{{"alpha", a}}, "new", []results.SpecRun{{"beta", b}}, results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	text = rc.NothingComparedText()
	for _, want := range []string{"nothing compared: OLD and NEW hold no spec in common\n", "OLD old (alpha): spec", "spec alpha: only in OLD", "spec beta: only in NEW"} {
		if rc.Outcome() != results.OutcomeNothingCompared || !strings.Contains(text, want) {
			t.Errorf("outcome %s; no %q in\n%s", rc.Outcome(), want, text)
		}
	}
}

// TestCompareRunsJSON: the JSON document holds the outcome, the counts,
// the rows with null for what does not exist, and the not-compared lists
// with their configuration changes.
func TestCompareRunsJSON(t *testing.T) {
	oldM := synthManifest("j", 6, []synthCell{{"hot", "16"}, {"reactor", "et"}, {"timer", "deadline"}}, noisy(121, typicalMeans, 0.03, nil))
	newM := synthManifest("j", 6, []synthCell{{"hot", "16"}, {"reactor", "et"}}, noisy(122, typicalMeans, 0.03, everyCell(results.MetricThroughput, 0.7)))
	newM.Cells[2].Config["callback"] = "50us"
	rc, err := results.CompareRuns("o", []results.SpecRun{{"", oldM}}, "n", []results.SpecRun{{"", newM}}, results.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rc.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Outcome      string   `json:"outcome"`
		Regressions  int      `json:"regressions"`
		Compared     int      `json:"compared_cells"`
		NotCompared  int      `json:"not_compared"`
		SpecsOnlyNew []string `json:"specs_only_new"`
		Metrics      []string `json:"metrics"`
		Specs        []struct {
			Spec        string   `json:"spec"`
			Compared    []string `json:"compared_cells"`
			NotCompared []struct {
				Cell, Why, Reason string
				Changes           []struct {
					Key      string
					Old, New *string
				}
			} `json:"not_compared"`
			Rows []struct {
				Cell, Metric string
				Tested       bool
				OldMedian    *float64 `json:"old_median"`
				Ratio        *float64
				PAdjusted    *float64 `json:"p_adjusted"`
				Verdict      string
				Regression   bool
			} `json:"rows"`
		} `json:"specs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if doc.Outcome != "regression" || doc.Regressions != 2 || doc.Compared != 2 || doc.NotCompared != 2 || doc.SpecsOnlyNew == nil || len(doc.Metrics) != 4 {
		t.Errorf("document %+v", doc)
	}
	if len(doc.Specs) != 1 || strings.Join(doc.Specs[0].Compared, ",") != "baseline,hot=16" || len(doc.Specs[0].NotCompared) != 2 {
		t.Fatalf("specs %+v", doc.Specs)
	}
	for _, nc := range doc.Specs[0].NotCompared {
		switch nc.Cell {
		case "timer=deadline":
			if nc.Why != "only_old" || nc.Reason != "only in the old runs" {
				t.Errorf("%+v", nc)
			}
		case "reactor=et":
			if nc.Why != "config_differs" || len(nc.Changes) != 1 || nc.Changes[0].Key != "callback" || *nc.Changes[0].Old != "0" || *nc.Changes[0].New != "50us" {
				t.Errorf("%+v", nc)
			}
		default:
			t.Errorf("%+v", nc)
		}
	}
	regressions := 0
	for _, r := range doc.Specs[0].Rows {
		if !r.Tested || r.OldMedian == nil || r.Ratio == nil || r.PAdjusted == nil {
			t.Errorf("row %+v", r)
		}
		if r.Regression {
			regressions++
		}
	}
	// hot=16 and the baseline regress on throughput (reactor=et is not
	// compared).
	if regressions != 2 {
		t.Errorf("%d regression rows, want 2", regressions)
	}
}
