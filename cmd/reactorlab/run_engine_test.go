//go:build linux

package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/internal/cli"
)

// TestRunEngineRefusals: --loadgen-engine takes epoll or uring, and uring
// with what only the epoll engine does is refused before anything starts,
// exit 2, in the load generator's words.
func TestRunEngineRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--loadgen-engine", "kqueue"}, `--loadgen-engine = "kqueue" (accepted: epoll or uring)`},
		{[]string{"--loadgen-engine", "uring", "--fault", "coalesced"}, "--loadgen-engine = uring: fault is the epoll engine's only"},
		{[]string{"--loadgen-engine", "uring", "--hot-lead", "1s"}, "--loadgen-engine = uring: hot-lead is the epoll engine's only"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"run", "--reactor", "lt", "--out", filepath.Join(t.TempDir(), "cell"), "--duration", "1s"}, tc.args...)
		if code := run(args, &stdout, &stderr); code != cli.ExitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), cli.ExitUsage, tc.want)
		}
	}
}
