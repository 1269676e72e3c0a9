package cases

import (
	"context"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
)

// noProcess is an instance without a process of its own (an in-process
// reactor, a GoServer): nothing of it can be diagnosed.
type noProcess struct{ conformance.Instance }

func (noProcess) Addr() string { return "127.0.0.1:1" }

// A server without a process of its own gives no diagnosis, only the
// reason in the log: absent, never a guess.
func TestNoProcessNoDiagnosis(t *testing.T) {
	d := diagnoseServing(context.Background(), noProcess{}, "now")
	if len(d.evidence) != 0 || len(d.unread) != 1 || !strings.Contains(d.unread[0], "no process of its own") {
		t.Errorf("diagnosis of an instance without a process: evidence %q, unread %q; want no evidence and the reason", d.evidence, d.unread)
	}
}
