package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/internal/jsontime"
)

// A thread's summary is its class and every line of its evidence, in
// order, on one line; a report's headline counts its threads and rounds
// its window to the millisecond.
func TestSummaryAndHeadline(t *testing.T) {
	th := Thread{Tid: 12, Comm: "echo", Class: Spinning, Evidence: []string{"CPU: ran 400ms", "signal (a): x", "signal (b): y"}}
	if got, want := th.Summary(), "thread 12 (echo): spinning: CPU: ran 400ms; signal (a): x; signal (b): y"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	r := Report{Pid: 7, Comm: "echo", Window: jsontime.Seconds(501400 * time.Microsecond), Threads: []Thread{th}, Others: 3}
	if got := r.Headline(); got != "pid 7 (echo): 1 loop thread, 3 other threads, observed 501ms" || strings.Contains(got, "took") {
		t.Errorf("Headline() = %q", got)
	}
}
