package results_test

import (
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/results"
)

// TestAnalyzeLimits: each valid run's limit flag is counted per cell (an
// invalid run's is not), said most frequent first, and the report shows a
// limit column and sentence for it; a report without flags has neither.
func TestAnalyzeLimits(t *testing.T) {
	m := synthManifest("limits", 4, []synthCell{{"hot", "16"}}, noisy(3, typicalMeans, 0.02, nil))
	var plain strings.Builder
	if err := results.WriteMarkdown(&plain, m, results.Analyze(m, nil)); err != nil {
		t.Fatal(err)
	}
	for i := range m.Runs {
		r := &m.Runs[i]
		switch {
		case r.Cell == "baseline":
			r.Metrics[results.MetricServerLimited] = 1
		case r.Repeat == 1:
			r.Metrics[results.MetricNeitherLimited] = 1
		case r.Repeat == 4:
			r.Valid, r.Invalid = false, []string{"late"}
			r.Metrics[results.MetricServerLimited] = 1
		default:
			r.Metrics[results.MetricLoadgenLimited] = 1
		}
	}
	a := results.Analyze(m, nil)
	if got := a.Cells[0].LimitText(); got != "server 4/4" {
		t.Errorf("baseline's limit %q, want server 4/4", got)
	}
	if got := a.Cells[1].LimitText(); got != "loadgen 2/3, neither 1/3" {
		t.Errorf("hot=16's limit %q (%v), want loadgen 2/3, neither 1/3", got, a.Cells[1].Limits)
	}
	var md strings.Builder
	if err := results.WriteMarkdown(&md, m, a); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| cell | valid runs | limit |", "| 4/4 | server 4/4 |", "| 3/4 | loadgen 2/3, neither 1/3 |",
		"The limit (the load generator's self-check, and whether a side's CPUs were 90% busy or more): server 4/4."} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(plain.String(), "| limit |") || strings.Contains(plain.String(), "The limit (") {
		t.Errorf("a report of runs without limit flags has a limit column or sentence")
	}
}
