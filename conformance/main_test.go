package conformance_test

import (
	"os"
	"testing"

	"github.com/reactorlab/reactorlab/internal/testbin"
)

// TestMain removes the binaries the tests built. The tests whose targets
// are child processes of their own are parallel: go test runs two of them
// at a time on two cores (its -parallel is GOMAXPROCS), after every other
// test of the package. The tests that run a reactor in this process are
// not, so that no two in-process reactors share the process's GOMAXPROCS,
// which an in-process target raises while it runs. The cases' timing
// bounds hold with the other core busy, which is the load two runs side
// by side make.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }
