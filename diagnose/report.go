package diagnose

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/reactorlab/reactorlab/internal/jsontime"
	"github.com/reactorlab/reactorlab/results/figure"
)

// Options bound an observation. The zero value of a field takes its
// default.
type Options struct {
	// Window is how long the process is observed (DefaultWindow; at most
	// MaxWindow).
	Window time.Duration
	// Interval is the time between two samples of every thread's state
	// and system call (DefaultInterval).
	Interval time.Duration
	// Looks is how many times within the window the epoll sets and the
	// sockets are read (DefaultLooks).
	Looks int
}

// The bounds of an observation.
const (
	DefaultWindow   = 2 * time.Second
	MinWindow       = 100 * time.Millisecond
	MaxWindow       = 60 * time.Second
	DefaultInterval = 10 * time.Millisecond
	DefaultLooks    = 10
)

// ErrNoProcess is Observe's error for a pid /proc does not show.
var ErrNoProcess = errors.New("no such process")

// ErrWindow is Observe's error for a window outside MinWindow..MaxWindow.
var ErrWindow = fmt.Errorf("the window must be %v..%v", MinWindow, MaxWindow)

// Report is what an observation saw: the loop threads, each classified,
// and what could not be read. Threads holds only the loop threads (Method
// says which those are); Others counts the rest.
type Report struct {
	Pid      int              `json:"pid"`
	Comm     string           `json:"comm"`
	Window   jsontime.Seconds `json:"window_s"`
	Interval jsontime.Seconds `json:"interval_s"`
	Method   string           `json:"method"`
	Threads  []Thread         `json:"loop_threads"`
	Others   int              `json:"other_threads"`
	// Ended counts the threads that ended within the window (not judged).
	Ended int `json:"ended_threads"`
	// Unreadable lists what could not be read of the process, and why.
	Unreadable []string `json:"unreadable,omitempty"`
	// Sampled counts the threads whose system call was read at least
	// once: 0 says no thread could be seen in a wait or a call (a process
	// of another user), and nothing was judged by what they were in.
	Sampled int `json:"sampled_threads"`
	// Elapsed is how long the observation took, the window included.
	Elapsed jsontime.Seconds `json:"elapsed_s"`
}

// Findings counts the loop threads whose class is a finding.
func (r Report) Findings() int {
	n := 0
	for _, t := range r.Threads {
		if t.Class.Finding() {
			n++
		}
	}
	return n
}

// WriteText writes the report as a person reads it: a line for the
// process, then per loop thread its class and its evidence, one line a
// signal, then the method.
func (r Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "pid %d (%s): %s, %s, observed %v (a sample every %v; took %v)\n",
		r.Pid, r.Comm, figure.Counted(len(r.Threads), "loop thread", "loop threads"), figure.Counted(r.Others, "other thread", "other threads"),
		time.Duration(r.Window).Round(time.Millisecond), time.Duration(r.Interval), time.Duration(r.Elapsed).Round(time.Millisecond))
	switch {
	case r.Sampled == 0:
		fmt.Fprintln(w, "no thread's system call could be read: which threads wait for events, and in what, is unknown")
	case len(r.Threads) == 0:
		fmt.Fprintln(w, "no thread was seen in an event wait or used a tenth of the window's CPU")
	}
	for _, t := range r.Threads {
		fmt.Fprintf(w, "\nthread %d (%s): %s\n", t.Tid, t.Comm, t.Class)
		for _, e := range t.Evidence {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	if r.Ended > 0 {
		fmt.Fprintf(w, "\n%d threads ended within the window and are not judged\n", r.Ended)
	}
	for _, u := range r.Unreadable {
		fmt.Fprintf(w, "not read: %s\n", u)
	}
	fmt.Fprintf(w, "\nmethod: %s\n", r.Method)
}
