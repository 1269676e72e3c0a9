//go:build linux

package reactors_test

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// runChild re-runs this test binary with env added and -test.run=run (for
// tests that need a process of their own: a lowered descriptor limit, a
// fresh runtime), kills it if it outlives bound, and returns its output;
// it fails t if the child fails.
func runChild(t *testing.T, run, env string, bound time.Duration) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(bound):
		cmd.Process.Kill()
		<-done
		t.Fatalf("child (%s) did not finish in %v:\n%s", env, bound, out)
	}
	if err != nil {
		t.Fatalf("child (%s) failed: %v\n%s", env, err, out)
	}
	return out
}
