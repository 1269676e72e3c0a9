//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/internal/cli"
)

// diagnoseTargetRun runs diagnose with args and --json -, and returns its
// exit code, its JSON (zero when there was none) and its stderr.
func diagnoseTargetRun(t *testing.T, args ...string) (int, targetDiagnosis, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append(append([]string{"diagnose"}, args...), "--json", "-"), &stdout, &stderr)
	var d targetDiagnosis
	if stdout.Len() > 0 {
		if err := json.Unmarshal(stdout.Bytes(), &d); err != nil {
			t.Fatalf("diagnose %v: exit %d, its JSON did not parse: %v\n%s", args, code, err, stdout.String())
		}
	}
	t.Logf("diagnose %v: exit %d\n%s", args, code, stderr.String())
	return code, d, stderr.String()
}

// classesOf counts the loop threads of every report by class.
func classesOf(d targetDiagnosis) map[diagnose.Class]int {
	m := map[diagnose.Class]int{}
	for _, r := range d.Reports {
		for _, th := range r.Threads {
			m[th.Class]++
		}
	}
	return m
}

// diagnose --target starts the target as conform does, observes the
// process that serves it, stops it and says how it ended: an idle
// reference reactor is waiting, exit 0; its permanent-epollout mutant
// under a light steady load (its connection idle between frames) is
// named spinning on its write interest with nothing to send, exit 1.
func TestDiagnoseTarget(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		code, d, _ := diagnoseTargetRun(t, "--target", "lt", "--for", "100ms")
		got := classesOf(d)
		if code != cli.ExitOK || len(d.Reports) != 1 || got[diagnose.Waiting] == 0 || len(got) != 1 || d.Stopped != "exit 0" || d.Load != nil {
			t.Errorf("exit %d, %d reports, classes %v, stopped %q, load %v; want exit 0, one report, every loop thread waiting, stopped with exit 0, no load", code, len(d.Reports), got, d.Stopped, d.Load)
		}
	})
	t.Run("mutant-under-load", func(t *testing.T) {
		if testing.Short() {
			t.Skip("-short: the idle target alone")
		}
		code, d, _ := diagnoseTargetRun(t, "--target", "lt", "--fault", "permanent-epollout", "--steady", "1", "--rate", "20", "--for", "300ms")
		named := false
		for _, r := range d.Reports {
			for _, th := range r.Threads {
				if th.Class == diagnose.Spinning && strings.Contains(strings.Join(th.Evidence, "\n"), "signal (write interest with nothing to send)") {
					named = true
				}
			}
		}
		if load, busy := overloaded(); !named && (classesOf(d)[diagnose.Starved] > 0 || busy) {
			t.Skipf("the machine starved the mutant's loop in the window (classes %v; load average %s on %d CPUs): a loop starved below a tenth of the window is not judged", classesOf(d), load, runtime.NumCPU())
		}
		if code != cli.ExitFail || !named || d.Load == nil || d.Load.Totals.Echoed == 0 || d.Load.Error != "" {
			t.Errorf("exit %d, classes %v, load %+v; want exit 1, a thread spinning on write interest with nothing to send, frames echoed under the load", code, classesOf(d), d.Load)
		}
	})
}

// How a started target ends is said as what it is: an exit status that
// answers the stop's SIGTERM is the answer, a crash at the stop is said
// and not counted (the window was observed before it), an exit within
// the window is the process ending (exit 1, nothing judged), and a
// program that cannot start is a refusal (exit 2), never a finding.
func TestDiagnoseTargetEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds examples/echo")
	}
	echo := buildEcho(t) + " --listen {addr} "
	for _, tc := range []struct {
		name, cmd, want, window string
		code                    int
		check                   func(d targetDiagnosis) bool
	}{
		{"term-exit-143", "--term-exit 143", "", "300ms", cli.ExitOK,
			func(d targetDiagnosis) bool { return strings.Contains(d.Stopped, "128 + SIGTERM") && d.AtStop == "" }},
		{"crash-at-stop", "--bug crash-at-stop", "", "300ms", cli.ExitOK,
			func(d targetDiagnosis) bool { return strings.Contains(d.AtStop, "panic") }},
		{"exits-within", "--lifetime 500ms", "ended within the window", "2s", cli.ExitFail, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, d, stderr := diagnoseTargetRun(t, "--target", "cmd:"+echo+tc.cmd, "--for", tc.window)
			if code == cli.ExitUsage && strings.Contains(stderr, "before it listened") {
				t.Skipf("the machine was too slow to start the echo within its lifetime: %s", stderr)
			}
			if code != tc.code || !strings.Contains(stderr, tc.want) || tc.check != nil && !tc.check(d) {
				t.Errorf("exit %d, stopped %q, at stop %q, stderr %q; want exit %d saying %q", code, d.Stopped, d.AtStop, stderr, tc.code, tc.want)
			}
		})
	}
}

// A target that cannot start is refused (exit 2) with why; flags that do
// not go together are usage errors naming them.
func TestDiagnoseRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "cmd:/nonexistent/server {addr}"}, "could not be started"},
		{[]string{"--target", "lt", "--pid", "1"}, "give one of --pid"},
		{[]string{"--pid", "1", "--hot", "2"}, "apply to --target only"},
		{[]string{"--target", "cmd:true", "--fault", "permanent-epollout"}, "--fault applies to --target DESIGN only"},
		{[]string{"--target", "lt", "--steady", "2"}, "--rate"},
		{[]string{"--target", "nginx"}, "--target"},
		{[]string{"--target", "lt", "--grace", "0s"}, "--grace"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"diagnose"}, tc.args...), &stdout, &stderr)
		if code != cli.ExitUsage || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("diagnose %v: exit %d, stdout %q, stderr %q; want exit 2 naming %q, nothing on stdout", tc.args, code, stdout.String(), stderr.String(), tc.want)
		}
	}
}

// overloaded reports the one-minute load average, and whether it is over
// twice the CPUs: a machine on which a spinning thread may get less than
// a tenth of a window's CPU.
func overloaded() (string, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown", false
	}
	f := strings.Fields(string(b))
	v, err := strconv.ParseFloat(f[0], 64)
	return f[0], err == nil && v > 2*float64(runtime.NumCPU())
}
