//go:build linux

package harness

import (
	"os"
	"testing"

	"github.com/reactorlab/reactorlab/harness/lab"
)

// A cell's processes are this test binary in the lab's roles and in
// serve's and loadgen's (registered by package roles, which this package
// imports): lab.RunRoleIfChild plays them before any test runs.
func TestMain(m *testing.M) {
	lab.RunRoleIfChild()
	// Under -race every process sleeps 1 s at exit (GORACE
	// atexit_sleep_ms) to let late reports out; the children inherit this.
	if _, ok := os.LookupEnv("GORACE"); !ok {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}
