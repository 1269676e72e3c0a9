package conformance_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
)

// flakyPrecondition is a case inconclusive on its first inconclusive runs
// and then as its last run says: a precondition that is a draw of timing.
func flakyPrecondition(id string, runs *atomic.Int32, inconclusiveRuns int32, last func(c *conformance.C)) conformance.Case {
	return conformance.Case{ID: id, Title: "a precondition that is a draw of timing", Claim: "c", Bound: "b",
		Run: func(c *conformance.C) {
			if runs.Add(1) <= inconclusiveRuns {
				c.Inconclusivef("the draw of timing went the other way")
			}
			last(c)
		}}
}

// Options.Retries runs an inconclusive case again until it is conclusive
// and says how many attempts it took; it never runs a failure, a pass or
// an inconclusive by design again, and it stops at its count.
func TestRetriesRunAnInconclusiveCaseAgain(t *testing.T) {
	pass := func(*conformance.C) {}
	fail := func(c *conformance.C) { c.Fatalf("it does not hold") }
	byDesign := func(c *conformance.C) { c.InconclusiveByDesignf("never offered") }
	for _, tc := range []struct {
		name         string
		inconclusive int32
		last         func(*conformance.C)
		retries      int
		wantVerdict  conformance.Verdict
		wantRuns     int32
		wantAttempts int
	}{
		{"inconclusive then pass", 2, pass, 2, conformance.Pass, 3, 3},
		{"inconclusive then fail", 1, fail, 2, conformance.Fail, 2, 2},
		{"retries run out", 5, pass, 2, conformance.Inconclusive, 3, 3},
		{"no retries", 1, pass, 0, conformance.Inconclusive, 1, 0},
		{"a failure is not run again", 0, fail, 2, conformance.Fail, 1, 0},
		{"a pass is not run again", 0, pass, 2, conformance.Pass, 1, 0},
		{"by design is not run again", 0, byDesign, 2, conformance.Inconclusive, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			cs := flakyPrecondition("Q1", &runs, tc.inconclusive, tc.last)
			results, err := conformance.RunAll(context.Background(), fakeTarget{}, []conformance.Case{cs},
				conformance.Options{NoStartCheck: true, Retries: tc.retries})
			if err != nil {
				t.Fatal(err)
			}
			r := results[0]
			if r.Verdict != tc.wantVerdict || runs.Load() != tc.wantRuns || r.Attempts != tc.wantAttempts {
				t.Fatalf("verdict %s after %d runs, Attempts %d; want %s after %d, Attempts %d (reason %q)",
					r.Verdict, runs.Load(), r.Attempts, tc.wantVerdict, tc.wantRuns, tc.wantAttempts, r.Reason)
			}
			if tc.wantAttempts > 1 {
				if got := strings.Count(strings.Join(r.Log, "\n"), "inconclusive (run again"); got != tc.wantAttempts-1 {
					t.Errorf("the log names %d earlier attempts, want %d: %q", got, tc.wantAttempts-1, r.Log)
				}
				var b strings.Builder
				if err := conformance.WriteTable(&b, "fake", results, false); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(b.String(), "(attempt ") {
					t.Errorf("the table does not say the case took several attempts:\n%s", b.String())
				}
			}
		})
	}
}
