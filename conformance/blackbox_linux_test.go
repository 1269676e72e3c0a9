//go:build linux

package conformance_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
)

// The project's example echo server as a black box: clean, it fails
// nothing (cases that need the reference protocol or counters are
// skipped, with their reason); with each injected bug, exactly the cases
// that bug breaks fail; and where a legitimate option of the server
// removes a case's precondition (it never fills its descriptor table,
// sets its own limit, or has socket buffers that absorb everything), that
// case is inconclusive, never a pass.
func TestBlackBox(t *testing.T) {
	echo := built(t, "echo", "")
	for _, tc := range []struct {
		name         string
		args         []string
		fail         []string
		inconclusive []string
		needCap      int // a capability the row needs (0: none)
	}{
		// A goroutine that blocks in write until its echo is out never holds
		// echoes when it reads a FIN: I3 and W4 cannot be exercised.
		{name: "clean", inconclusive: []string{"W4", "I3"}},
		{name: "drop-partial", args: []string{"--bug", "drop-partial"}, fail: []string{"F1"}},
		{name: "no-backpressure", args: []string{"--bug", "no-backpressure"}, fail: []string{"W1"}},
		{name: "busy-idle", args: []string{"--bug", "busy-idle"}, fail: []string{"W2"}},
		{name: "leak-on-close", args: []string{"--bug", "leak-on-close"}, fail: []string{"I2"}},
		{name: "exit-on-emfile", args: []string{"--bug", "exit-on-emfile"}, fail: []string{"R4"}},
		{name: "free-at-eof", args: []string{"--bug", "free-at-eof"}, fail: []string{"I3"}},
		// R4 measures idle CPU first: a server that spins while idle is
		// W2's failure, and R4 cannot tell anything more.
		{name: "busy-idle/R4", args: []string{"--bug", "busy-idle"}, inconclusive: []string{"R4"}},
		{name: "max-conns", args: []string{"--max-conns", "16"}, inconclusive: []string{"R4"}},
		{name: "nofile", args: []string{"--nofile", "40"}, inconclusive: []string{"R4"}},
		{name: "sockbuf", args: []string{"--sockbuf", strconv.Itoa(64 << 20)}, inconclusive: []string{"W4", "I2", "I3"}, needCap: capNetAdmin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needCap != 0 && !haveCap(tc.needCap) {
				t.Skipf("needs capability %d (CAP_NET_ADMIN: SO_SNDBUFFORCE) to give the server buffers larger than the kernel's maxima", tc.needCap)
			}
			argv := append([]string{echo, "--listen", "{addr}", "--lifetime", "5m"}, tc.args...)
			opts := conformance.Options{}
			if tc.name != "clean" {
				// The row's own cases, and one it must not disturb.
				opts.Cases = append(slices.Concat(tc.fail, tc.inconclusive), "R1")
			}
			results, err := conformance.RunAll(context.Background(), conformance.Command{Argv: argv}, opts)
			if err != nil {
				t.Fatal(err)
			}
			var failed, skipped, inconclusive, row []string
			for _, r := range results {
				row = append(row, fmt.Sprintf("%s %s", r.ID, r.Verdict))
				switch r.Verdict {
				case conformance.Fail:
					failed = append(failed, r.ID)
					if r.Cause != conformance.CauseClaim {
						t.Errorf("%s failed for cause %q, want a claim failure", r.ID, r.Cause)
					}
					t.Logf("%s failed: %s\n%s", r.ID, r.Reason, strings.Join(r.Evidence, "\n"))
				case conformance.Skip:
					skipped = append(skipped, r.ID)
					t.Logf("%s skipped: %s", r.ID, r.Reason)
				case conformance.Inconclusive:
					inconclusive = append(inconclusive, r.ID)
					t.Logf("%s inconclusive: %s", r.ID, r.Reason)
				}
			}
			t.Logf("echo %v: %s", tc.args, strings.Join(row, ", "))
			if !slices.Equal(failed, tc.fail) {
				t.Errorf("echo %v: failed %v, want exactly %v", tc.args, failed, tc.fail)
			}
			if !slices.Equal(inconclusive, tc.inconclusive) {
				t.Errorf("echo %v: inconclusive %v, want exactly %v", tc.args, inconclusive, tc.inconclusive)
			}
			// A black box skips exactly what needs the reference protocol,
			// control address or counters; everything else runs.
			if want := []string{"F4", "S2", "S3", "T1", "X1", "X2"}; tc.name == "clean" && !slices.Equal(skipped, want) {
				t.Errorf("clean echo skipped %v, want exactly %v", skipped, want)
			}
		})
	}
}

// capNetAdmin is CAP_NET_ADMIN's number.
const capNetAdmin = 12

// haveCap reports whether this process has capability bit in its
// effective set.
func haveCap(bit int) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && n&(1<<bit) != 0
		}
	}
	return false
}
