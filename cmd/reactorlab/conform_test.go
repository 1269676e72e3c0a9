//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/harness"
)

func TestConformRefusesBadUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--target is required"},
		{[]string{"--target", "nginx"}, "--target"},
		{[]string{"--target", "cmd:"}, "needs a command"},
		{[]string{"--target", "cmd:true", "--fault", "no-drain"}, "reference targets only"},
		{[]string{"--target", "lt", "--fault", "gremlins"}, "gremlins"},
		{[]string{"--target", "lt", "--case", "Q9"}, "Q9"},
		{[]string{"--target", "lt", "extra"}, "extra"},
		{[]string{"--target", "lt", "--timeout", "soon"}, "timeout"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"conform"}, tc.args...), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("conform %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

func TestConformList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"conform", "--list"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, c := range conformance.Catalogue() {
		if !strings.Contains(stdout.String(), c.ID+"  "+c.Title) {
			t.Errorf("--list lacks %s %q:\n%s", c.ID, c.Title, stdout.String())
		}
	}
}

// A reference target runs as a child process of this executable: pass on
// the clean reactor, fail (exit 1) on a mutant, with the JSON and JUnit
// reports agreeing with the table.
func TestConformReferenceProcess(t *testing.T) {
	t.Setenv(asMainEnv, "1")
	dir := t.TempDir()
	jsonPath, junitPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	var stdout, stderr bytes.Buffer
	code := run([]string{"conform", "--target", "et", "--case", "F1,F2,X2", "--json", jsonPath, "--junit", junitPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("clean et: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "process:et: 3 passed, 0 failed, 0 skipped") {
		t.Fatalf("table:\n%s", stdout.String())
	}
	var rep conformance.Report
	if b, err := os.ReadFile(jsonPath); err != nil || json.Unmarshal(b, &rep) != nil || rep.Summary.Pass != 3 {
		t.Fatalf("json report %+v (%v)", rep, err)
	}
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if b, err := os.ReadFile(junitPath); err != nil || xml.Unmarshal(b, &suite) != nil || suite.Tests != 3 || suite.Failures != 0 {
		t.Fatalf("junit report %+v (%v)", suite, err)
	}

	stdout.Reset()
	stderr.Reset()
	code = run([]string{"conform", "--target", "et", "--fault", "no-drain", "--case", "F2"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "F2") || !strings.Contains(stdout.String(), "fail") {
		t.Fatalf("et + no-drain: exit %d, want 1 with F2 failing\n%s\n%s", code, stdout.String(), stderr.String())
	}
}

// The suite inside a lab of its own (--lab asks for the lab, never
// loopback): it gives the same verdicts, exits with the suite's status,
// writes its reports where it was asked to, and the lab's audit is clean
// after a clean run and after a failing one.
func TestConformInLab(t *testing.T) {
	if err := harness.CheckLab(context.Background()); err != nil {
		if required, why := harness.LabRequired(); required || !errors.Is(err, harness.ErrLabUnavailable) {
			t.Fatalf("the lab must work here (%s): %v", why, err)
		}
		t.Skipf("no lab here: %v", err)
	}
	t.Setenv(asMainEnv, "1")
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"conform", "--lab", "--target", "lt", "--case", "F1,R3", "--json", jsonPath}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "process:lt: 2 passed, 0 failed") ||
		!strings.Contains(stderr.String(), "ran in the lab") || !strings.Contains(stderr.String(), "audit clean") {
		t.Fatalf("clean lt in the lab: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var rep conformance.Report
	if b, err := os.ReadFile(jsonPath); err != nil || json.Unmarshal(b, &rep) != nil || rep.Summary.Pass != 2 {
		t.Fatalf("json report %+v (%v)", rep, err)
	}
	stdout.Reset()
	stderr.Reset()
	code = run([]string{"conform", "--target", "lt", "--fault", "drop-partial", "--case", "F1", "--lab"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stdout.String(), "F1") || !strings.Contains(stdout.String(), "fail") ||
		!strings.Contains(stderr.String(), "audit clean") {
		t.Fatalf("lt + drop-partial in the lab: exit %d, want 1 with F1 failing and a clean lab\n%s\n%s", code, stdout.String(), stderr.String())
	}
}

// An inconclusive case is counted apart in the table, the JSON and the
// JUnit report; it does not fail the run unless --strict says so.
func TestConformInconclusive(t *testing.T) {
	bin := buildEcho(t)
	dir := t.TempDir()
	jsonPath, junitPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	// A server that never fills its descriptor table: R4 cannot be tested.
	target := "cmd:" + bin + " --max-conns 16"
	var stdout, stderr bytes.Buffer
	code := run([]string{"conform", "--target", target, "--case", "R4,F1", "--json", jsonPath, "--junit", junitPath}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "1 passed, 0 failed, 0 skipped, 1 inconclusive") {
		t.Fatalf("exit %d, want 0 with one inconclusive\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var rep conformance.Report
	if b, err := os.ReadFile(jsonPath); err != nil || json.Unmarshal(b, &rep) != nil || rep.Summary.Inconclusive != 1 || rep.Summary.Pass != 1 {
		t.Fatalf("json report %+v (%v)", rep.Summary, err)
	}
	var suite struct {
		Skipped      int `xml:"skipped,attr"`
		Inconclusive int `xml:"inconclusive,attr"`
		Cases        []struct {
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	}
	if b, err := os.ReadFile(junitPath); err != nil || xml.Unmarshal(b, &suite) != nil || suite.Inconclusive != 1 || suite.Skipped != 1 ||
		len(suite.Cases) != 2 || suite.Cases[1].Skipped == nil || !strings.HasPrefix(suite.Cases[1].Skipped.Message, "inconclusive: ") { // F1, then R4
		t.Fatalf("junit report %+v (%v)", suite, err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"conform", "--strict", "--target", target, "--case", "R4"}, &stdout, &stderr); code != 1 {
		t.Fatalf("--strict with an inconclusive case: exit %d, want 1\n%s", code, stdout.String())
	}
}
