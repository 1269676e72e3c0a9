//go:build linux

package conformance_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// exampleModule is the module that shows a Go developer how to test an
// event loop of their own with the suite: a module of its own, which
// requires this one through a replace directive.
const exampleModule = "../examples/myloop"

// The example module builds and passes its own go test, with the go
// toolchain running this test, its go.sum as committed (-mod=readonly: a
// missing entry fails, it is not fetched), its own test's output naming
// each case and counting the verdicts, with its log lines pointing at
// its own test file. It runs -short when this test does.
func TestExampleModule(t *testing.T) {
	goBin, err := exec.LookPath("go") // go test puts its own GOROOT/bin first on PATH
	if err != nil {
		t.Skipf("no go toolchain to build the example module with: %v", err)
	}
	dir, err := filepath.Abs(exampleModule)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"test", "-mod=readonly", "-count=1", "-v"}
	if testing.Short() {
		args = append(args, "-short")
	}
	args = append(args, "./...")
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(withoutModFlag(os.Environ()), "GOWORK=off", "GOTOOLCHAIN=local")
	cmd.WaitDelay = 10 * time.Second
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), exampleModule, err, out)
	}
	summary := regexp.MustCompile(`(?m)^\s+myloop_test\.go:\d+: (conformance: \d+ passed, \d+ skipped, \d+ inconclusive( \(\d+ of them by the server's design\))?, 0 failed on go:myloop)$`).FindSubmatch(out)
	if summary == nil || !strings.Contains(string(out), "--- PASS: TestConformance/F1_fragmented_frames") || strings.Contains(string(out), "runner.go:") {
		t.Fatalf("go %s in %s: no summary line at myloop_test.go, no subtest named by id and title, or a line pointing at runner.go:\n%s", strings.Join(args, " "), exampleModule, out)
	}
	t.Logf("%s, in %v (the build included)", summary[1], time.Since(t0).Round(time.Second))
}

// withoutModFlag is env with any -mod flag taken out of GOFLAGS: the
// example's go.sum must be complete without -mod=mod.
func withoutModFlag(env []string) []string {
	var out []string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			var keep []string
			for _, f := range strings.Fields(v) {
				if !strings.HasPrefix(f, "-mod=") {
					keep = append(keep, f)
				}
			}
			kv = "GOFLAGS=" + strings.Join(keep, " ")
		}
		out = append(out, kv)
	}
	return out
}
