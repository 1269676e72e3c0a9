//go:build linux

package cases_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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
			if r.Verdict == conformance.Pass && starvedInW2(r) {
				t.Skipf("the machine starved the server under W2's CPU bound, so W2 did not fail it: there is no failure to explain")
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
			if !named && (slices.ContainsFunc(diagnosed, func(e string) bool { return strings.Contains(e, ": starved: ") }) || starvedInW2(r)) {
				t.Skipf("the machine starved the server (it waited for a CPU at least as long as it ran): a spinner starved below a tenth of the window is not judged by diagnose; its diagnosis: %q", diagnosed)
			}
			if !named {
				t.Errorf("W2's failure evidence names no thread spinning on two signals with %q; its diagnosis: %q", tc.signal, diagnosed)
			}
		})
	}
}

// w2Wait is W2's log line of the server's CPU and run-queue wait.
var w2Wait = regexp.MustCompile(`server CPU (\S+) \(and (\S+) waiting for a CPU\)`)

// starvedInW2 reports whether W2's log says the server waited for a CPU
// at least as long as it ran in its window: a machine too busy to show
// diagnose a spin (each spinning thread may then run under the tenth of
// the window that makes it a loop thread).
func starvedInW2(r conformance.Result) bool {
	for _, l := range r.Log {
		if m := w2Wait.FindStringSubmatch(l); m != nil {
			ran, err1 := time.ParseDuration(m[1])
			wait, err2 := time.ParseDuration(m[2])
			return err1 == nil && err2 == nil && wait >= ran
		}
	}
	return false
}
