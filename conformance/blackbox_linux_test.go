//go:build linux

package conformance_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
)

// The project's example echo server as a black box: clean, it fails
// nothing (cases that need the reference protocol or counters are
// skipped, with their reason); with each injected bug, exactly the cases
// that bug breaks fail.
func TestBlackBox(t *testing.T) {
	echo := built(t, "echo", "")
	for _, tc := range []struct {
		bug  string
		fail []string
	}{
		{"", nil},
		{"drop-partial", []string{"F1"}},
		{"no-backpressure", []string{"W1"}},
		{"busy-idle", []string{"W2"}},
		{"leak-on-close", []string{"I2"}},
		{"exit-on-emfile", []string{"R4"}},
	} {
		name := tc.bug
		if name == "" {
			name = "clean"
		}
		t.Run(name, func(t *testing.T) {
			argv := []string{echo, "--listen", "{addr}", "--lifetime", "5m"}
			if tc.bug != "" {
				argv = append(argv, "--bug", tc.bug)
			}
			opts := conformance.Options{}
			if tc.bug != "" {
				// The bug's own cases, and one it must not disturb.
				opts.Cases = append(slices.Clone(tc.fail), "R1")
			}
			results, err := conformance.RunAll(context.Background(), conformance.Command{Argv: argv}, opts)
			if err != nil {
				t.Fatal(err)
			}
			var failed, skipped, row []string
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
				}
			}
			t.Logf("echo --bug %q: %s", tc.bug, strings.Join(row, ", "))
			if !slices.Equal(failed, tc.fail) {
				t.Errorf("echo --bug %q: failed %v, want exactly %v", tc.bug, failed, tc.fail)
			}
			// A black box skips exactly what needs the reference protocol,
			// control address or counters; everything else runs.
			if want := []string{"F4", "S2", "S3", "T1", "X1", "X2"}; tc.bug == "" && !slices.Equal(skipped, want) {
				t.Errorf("clean echo skipped %v, want exactly %v", skipped, want)
			}
		})
	}
}
