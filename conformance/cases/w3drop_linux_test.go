//go:build linux

package cases

import (
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// A reactor that drops the unwritten rest of a short write (lt,
// drop-short-write) fails W3 on the bytes the connection got against the
// bytes sent: how many are missing and where, and, since the bytes after
// the gap are the stream further on, the drop named as the likely cause.
// A frame's symptom alone ("payload differs … corrupted", or no frame
// within the bound) named no gap.
func TestW3SaysBytesMissing(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Faults.DropShortWrite = true
	r := runCaseOn(t, "W3", conformance.InProcess{Design: reactors.LT, Config: &cfg}, conformance.Options{})
	if r.Verdict != conformance.Fail || r.Cause != conformance.CauseClaim {
		t.Fatalf("W3 on drop-short-write: %s (%s); want a claim failure", r.Verdict, r.Cause)
	}
	for _, want := range []string{"bytes missing after offset", "the server dropped the unwritten rest of a write?", "bytes after the gap are the stream from offset"} {
		if !strings.Contains(r.Reason, want) {
			t.Errorf("W3's failure %q does not say %q", r.Reason, want)
		}
	}
}
