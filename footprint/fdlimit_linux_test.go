package footprint

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fdLimitChildEnv makes the test binary the child of
// TestRaiseFdLimitAboveTheHardLimit: lowering a hard limit cannot be
// undone without CAP_SYS_RESOURCE, so it is done in a process of its own.
const fdLimitChildEnv = "REACTORLAB_FOOTPRINT_FDLIMIT_CHILD"

// hasSysResource reports whether this process holds CAP_SYS_RESOURCE
// (bit 24 of CapEff), which raising a hard limit needs.
func hasSysResource(t *testing.T) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return caps&(1<<unix.CAP_SYS_RESOURCE) != 0
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return false
}

// TestRaiseFdLimitAboveTheHardLimit: a hard limit below what the
// measurement needs is raised where the process may (CAP_SYS_RESOURCE);
// where it may not, the error wraps ErrFdLimit and names the limit, and
// the limit is left as it was.
func TestRaiseFdLimitAboveTheHardLimit(t *testing.T) {
	if os.Getenv(fdLimitChildEnv) == "1" {
		low := unix.Rlimit{Cur: 512, Max: 1024}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
			t.Fatal(err)
		}
		err := raiseFdLimit(4096)
		var now unix.Rlimit
		if gerr := unix.Getrlimit(unix.RLIMIT_NOFILE, &now); gerr != nil {
			t.Fatal(gerr)
		}
		if hasSysResource(t) {
			if err != nil || now.Cur < 4096 {
				t.Fatalf("with CAP_SYS_RESOURCE: raiseFdLimit(4096) = %v, limit now %+v; want it raised", err, now)
			}
			return
		}
		if !errors.Is(err, ErrFdLimit) || !strings.Contains(err.Error(), "hard limit 1024") || now != low {
			t.Fatalf("without CAP_SYS_RESOURCE: raiseFdLimit(4096) = %v, limit now %+v; want ErrFdLimit naming 1024, the limit unchanged", err, now)
		}
		return
	}
	var saved unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &saved); err != nil {
		t.Fatal(err)
	}
	if saved.Max < 1024 {
		t.Skipf("the hard limit %d is below the test's 1024", saved.Max)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRaiseFdLimitAboveTheHardLimit$", "-test.v")
	cmd.Env = append(os.Environ(), fdLimitChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child (CAP_SYS_RESOURCE %v):\n%s", hasSysResource(t), out)
}
