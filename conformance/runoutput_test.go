package conformance_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/conformance/cases"
	"github.com/reactorlab/reactorlab/reactors"
)

// runOutputChild is set in the environment of the test binary that
// TestRunOutput runs: only there does TestRunOutputChild run its cases.
const runOutputChild = "REACTORLAB_RUN_OUTPUT_CHILD"

// What go test -v prints of conformance.Run is what a reader of the
// user's test needs: subtests named by id and claim, every log and error
// line pointing at the user's call of Run (not at the runner's source),
// and one line counting the verdicts; -run selects a case by its id, and
// the count is of what ran. The run is a child test binary (this one),
// since a test cannot read its own output.
func TestRunOutput(t *testing.T) {
	whole := runChild(t, "^TestRunOutputChild$")
	callLine := regexp.MustCompile(`conformance.Run is called at line (\d+)`).FindStringSubmatch(whole)
	if callLine == nil {
		t.Fatalf("the child did not say where it calls conformance.Run:\n%s", whole)
	}
	at := "runoutput_test.go:" + callLine[1] + ": "
	for _, want := range []string{
		"=== RUN   TestRunOutputChild/P1_a_claim_that_holds\n",
		"--- SKIP: TestRunOutputChild/K1_needs_what_the_target_lacks ",
		"--- SKIP: TestRunOutputChild/N1_a_precondition_the_case_could_not_set_up ",
		"--- FAIL: TestRunOutputChild/E1_a_claim_that_does_not_hold_a_targets_bug ",
		at + "P1 logged this\n",
		at + "needs the reference protocol",
		at + "INCONCLUSIVE: the precondition could not be set up\n",
		at + "E1 a claim that does not hold (a target's bug): it does not hold\n",
		at + "conformance: 1 passed, 1 skipped, 1 inconclusive, 1 failed on fake\n",
	} {
		if !strings.Contains(whole, want) {
			t.Errorf("go test -v output lacks %q", want)
		}
	}
	// Every file:line go test prints is the call of Run.
	for _, m := range regexp.MustCompile(`(?m)^\s+(\S+\.go:\d+): `).FindAllStringSubmatch(whole, -1) {
		if m[1]+": " != at {
			t.Errorf("a line points at %s, not at the call of Run (%s)", m[1], strings.TrimSuffix(at, ": "))
		}
	}
	if t.Failed() {
		t.Logf("the child's output:\n%s", whole)
	}

	one := runChild(t, "^TestRunOutputChild$/N1")
	if strings.Contains(one, "=== RUN   TestRunOutputChild/P1") || !strings.Contains(one, "=== RUN   TestRunOutputChild/N1_") {
		t.Errorf("-run 'TestRunOutputChild/N1' did not select N1 alone:\n%s", one)
	}
	if !strings.Contains(one, "conformance: 0 passed, 0 skipped, 1 inconclusive, 0 failed on fake\n") {
		t.Errorf("the count of a run of N1 alone is not of N1 alone:\n%s", one)
	}
}

// runChild runs TestRunOutputChild in a child of this test binary with
// -test.v and -test.run pattern, and returns its output.
func runChild(t *testing.T, pattern string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.v", "-test.count=1", "-test.run="+pattern)
	cmd.Env = append(os.Environ(), runOutputChild+"=1")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	// E1 fails on purpose: the child exits 1 whenever it runs.
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1) {
		t.Fatalf("%v: %v\n%s", cmd, err, out)
	}
	return string(out)
}

// TestRunOutputChild is the test TestRunOutput runs in a child process; it
// skips elsewhere.
func TestRunOutputChild(t *testing.T) {
	if os.Getenv(runOutputChild) == "" {
		t.Skip("the child of TestRunOutput: it runs only there")
	}
	run := []conformance.Case{
		{ID: "P1", Title: "a claim that holds", Run: func(c *conformance.C) { c.Logf("P1 logged this") }},
		{ID: "K1", Title: "needs what the target lacks", Needs: conformance.NeedReference, Run: func(c *conformance.C) {}},
		{ID: "N1", Title: "a precondition the case could not set up", Run: func(c *conformance.C) {
			c.Inconclusivef("the precondition could not be set up")
		}},
		{ID: "E1", Title: "a claim that does not hold (a target's bug)", Run: func(c *conformance.C) { c.Errorf("it does not hold") }},
	}
	_, _, line, _ := runtime.Caller(0)
	fmt.Printf("conformance.Run is called at line %d\n", line+2)
	conformance.Run(t, fakeTarget{}, run, conformance.Options{NoStartCheck: true})
}

// fakeTarget starts instances that serve nothing: the cases of
// TestRunOutputChild use none.
type fakeTarget struct{}

func (fakeTarget) Name() string { return "fake" }
func (fakeTarget) Start(ctx context.Context, _ conformance.Setup) (conformance.Instance, error) {
	return fakeInstance{}, nil
}

type fakeInstance struct{}

func (fakeInstance) Addr() string                      { return "127.0.0.1:9" }
func (fakeInstance) ControlAddr() string               { return "" }
func (fakeInstance) Reference() *conformance.Reference { return nil }
func (fakeInstance) Stats() (reactors.Stats, error) {
	return reactors.Stats{}, conformance.ErrUnsupported
}
func (fakeInstance) Usage() (conformance.Usage, error) {
	return conformance.Usage{RunqWait: -1, RSS: -1, Fds: -1}, nil
}
func (fakeInstance) Stop() (conformance.Final, error) { return conformance.Final{Clean: true}, nil }

// Each case's subtest name starts with its id and an underscore, names
// no other case, and holds no character go test would rewrite or split
// on: -run 'TestX/^W4_' selects W4 alone.
func TestSubtestNames(t *testing.T) {
	seen := map[string]string{}
	for _, cs := range cases.Catalogue() {
		name := conformance.SubtestName(cs)
		if !regexp.MustCompile(`^` + cs.ID + `_[A-Za-z0-9_-]+$`).MatchString(name) {
			t.Errorf("%s: subtest name %q is not the id, '_' and letters, digits, '-' and '_'", cs.ID, name)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("%s and %s share the subtest name %q", other, cs.ID, name)
		}
		seen[name] = cs.ID
	}
	for _, id := range seen {
		n := 0
		for name := range seen {
			if regexp.MustCompile(`^` + id + `_`).MatchString(name) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("'^%s_' matches %d subtest names", id, n)
		}
	}
	w4 := conformance.Case{ID: "W4", Title: "a half-closed peer that does not read, does not freeze the others"}
	if got, want := conformance.SubtestName(w4), "W4_a_half-closed_peer_that_does_not_read_does_not_freeze_the_others"; got != want {
		t.Errorf("SubtestName(%q) = %q, want %q", w4.Title, got, want)
	}
}
