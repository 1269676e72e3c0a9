//go:build linux

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/internal/cli"
)

// TestFootprintErrorIsPrefixedOnce: a measurement that fails (here its
// --timeout ends the start) is one line naming the command once and the
// target once.
func TestFootprintErrorIsPrefixedOnce(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"footprint", "--target", "cmd:sleep 100", "--conns", "5", "--timeout", "1ms"}, &stdout, &stderr)
	msg := stderr.String()
	if code != cli.ExitFail || stdout.Len() != 0 || !strings.HasPrefix(msg, "reactorlab footprint: cmd:sleep 100: ") ||
		strings.Count(msg, "footprint:") != 1 || strings.Count(msg, "cmd:sleep 100") != 1 {
		t.Errorf("exit %d (want %d), stdout %q, stderr %q: want one line naming the command and the target once each", code, cli.ExitFail, stdout.String(), msg)
	}
}
