//go:build linux

package cases_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/internal/testbin"
	"github.com/reactorlab/reactorlab/reactors"
)

// A case that fails on a server with a process of its own carries, in
// its evidence, what diagnose saw that server's loop threads do while the
// failure's condition held; a case that passes carries none. W2 on
// examples/echo --bug busy-idle (each idle connection's goroutine spins
// on non-blocking reads) names the spin and its signals, reads that
// returned nothing among them; W2 on lt's permanent-epollout mutant names
// its write interest with nothing to send; W2 on the clean echo passes
// with no diagnosis.
func TestFailureEvidenceCarriesTheDiagnosis(t *testing.T) {
	echo := testbin.Path(t, "examples/echo")
	mutant := reactors.DefaultConfig()
	mutant.Faults.PermanentEPOLLOUT = true
	for _, tc := range []struct {
		name   string
		target conformance.Target
		signal string // "": the case passes, with no diagnosis
	}{
		{"busy-idle", conformance.Command{Argv: []string{echo, "--listen", "{addr}", "--lifetime", "1m", "--bug", "busy-idle"}}, "signal (reads that returned nothing)"},
		{"permanent-epollout", conformance.Process{Design: reactors.LT, Config: &mutant, Command: []string{testbin.Path(t, "cmd/reactorlab")}}, "signal (write interest with nothing to send)"},
		{"clean", conformance.Command{Argv: []string{echo, "--listen", "{addr}", "--lifetime", "1m"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a child process target: see TestMain
			if testing.Short() && tc.name != "busy-idle" {
				t.Skip("-short: the busy-idle row alone")
			}
			results, err := conformance.RunAll(context.Background(), tc.target, mustSelect(t, []string{"W2"}), conformance.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := results[0]
			t.Logf("W2 %s (%s): %s\nevidence:\n%s\nlog:\n%s", r.Verdict, r.Cause, r.Reason, strings.Join(r.Evidence, "\n"), strings.Join(r.Log, "\n"))
			var diagnosed []string
			for _, e := range r.Evidence {
				if strings.HasPrefix(e, "diagnose") {
					diagnosed = append(diagnosed, e)
				}
			}
			if tc.signal == "" {
				if r.Verdict != conformance.Pass || len(diagnosed) > 0 {
					t.Errorf("W2 on the clean echo: %s, diagnosis %q; want a pass carrying none", r.Verdict, diagnosed)
				}
				return
			}
			if r.Verdict != conformance.Fail || r.Cause != conformance.CauseClaim {
				t.Fatalf("W2 %s (%s): %s; want a claim failure", r.Verdict, r.Cause, r.Reason)
			}
			named := false
			for _, e := range diagnosed {
				if strings.HasPrefix(e, "diagnose: thread ") && strings.Contains(e, ": spinning: ") && strings.Contains(e, tc.signal) && strings.Count(e, "signal (") >= 2 {
					named = true
				}
			}
			if !named && slices.ContainsFunc(diagnosed, func(e string) bool { return strings.Contains(e, ": starved: ") }) {
				t.Skipf("the machine starved the server's threads in the diagnosis's window (diagnose says so): %q", diagnosed)
			}
			if !named {
				t.Errorf("W2's failure evidence names no thread spinning on two signals with %q; its diagnosis: %q", tc.signal, diagnosed)
			}
		})
	}
}
