package diagnose

import (
	"fmt"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/results/figure"
)

// Summary is the thread's conclusion on one line, for a report that
// holds other findings beside it (a conformance case's evidence):
// "thread TID (COMM): CLASS: " and its evidence, in Classify's order,
// joined by "; ". It says nothing Evidence does not.
func (t Thread) Summary() string {
	return fmt.Sprintf("thread %d (%s): %s: %s", t.Tid, t.Comm, t.Class, strings.Join(t.Evidence, "; "))
}

// Headline is the first line of WriteText without its timing: the pid,
// its command, its loop and other threads, and the window observed.
func (r Report) Headline() string {
	return fmt.Sprintf("pid %d (%s): %s, %s, observed %v", r.Pid, r.Comm,
		figure.Counted(len(r.Threads), "loop thread", "loop threads"), figure.Counted(r.Others, "other thread", "other threads"),
		time.Duration(r.Window).Round(time.Millisecond))
}
