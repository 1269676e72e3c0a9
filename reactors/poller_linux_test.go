//go:build linux

package reactors_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

const pollerChildEnv = "REACTORLAB_TEST_POLLER_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(pollerChildEnv) != "" {
		os.Exit(pollerChild())
	}
	os.Exit(m.Run())
}

// pollerChild runs before the testing package arms any timer, so the Go
// runtime's poller does not exist yet unless reactors.New started it: it
// builds a reactor, fills the descriptor table (as a reactor shedding load
// at EMFILE does), then arms the process's first timer.
func pollerChild() int {
	lim := unix.Rlimit{Cur: 64, Max: 64}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Println("setrlimit:", err)
		return 1
	}
	r, err := designs.New(reactors.LT, reactors.DefaultConfig())
	if err != nil {
		fmt.Println("new:", err)
		return 1
	}
	defer r.Stop()
	for {
		if _, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			break
		}
	}
	t := time.NewTimer(time.Millisecond)
	<-t.C
	fmt.Println("timer fired with the descriptor table full")
	return 0
}

// A process whose descriptor table a reactor has filled must still be
// able to arm a timer: the runtime creates its poller lazily and dies if
// that finds no descriptor free (found by conformance R4: `reactorlab
// serve` crashed with "runtime: netpollinit failed").
func TestRegressionRuntimePollerStartedBeforeEMFILE(t *testing.T) {
	out := runChild(t, "^$", pollerChildEnv+"=1", 30*time.Second)
	if !strings.Contains(string(out), "timer fired") {
		t.Fatalf("child:\n%s", out)
	}
}
