//go:build linux

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
)

// TestProgressTotalCountsHotLead: the progress line's total is the whole
// run the load generator's clock counts, a hot lead included.
func TestProgressTotalCountsHotLead(t *testing.T) {
	var b bytes.Buffer
	p := newProgressPrinter(&b, loadgen.Config{Hot: 1, HotLead: 500 * time.Millisecond, Warmup: time.Second, Duration: 4 * time.Second})
	if line := p.line(loadgen.Progress{Elapsed: time.Second}); !strings.Contains(line, "1.0s/5.5s") {
		t.Errorf("line %q, want the total 5.5s", line)
	}
}
