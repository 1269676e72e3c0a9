package harness

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
)

// StartCause says why a run's server could not be started: proc's
// classification of a failed start, StartMissing, StartExited or
// StartNoListener.
type StartCause = proc.StartCause

// The causes of a StartFailure (proc.StartError.Cause's).
const (
	StartMissing    = proc.StartMissing
	StartExited     = proc.StartExited
	StartNoListener = proc.StartNoListener
)

// StartFailure is why a run's server could not be started: nothing was
// measured, the client was never started, and the server has been killed
// and reaped (or, with Cause StartMissing and no Exit, was never started).
// It is an error, worded as proc.StartReport words every failed start;
// LabResult.StartFailure carries it across the lab child's report, and
// RunCell's error wraps it.
type StartFailure struct {
	Cause StartCause `json:"cause"`
	// Target names the server as its user named it: "cmd:COMMAND" or the
	// reference design; RunCell sets it, and "" (a bare Run) is the
	// server's argv.
	Target string `json:"target,omitempty"`
	// Exit is how the server ended ("exit status 127"), for StartMissing
	// and StartExited; "" when it was not started (a program found
	// missing before).
	Exit string `json:"exit,omitempty"`
	// Addrs are the addresses it was to accept connections on.
	Addrs []string `json:"addrs,omitempty"`
	// Timeout is how long they were waited for (StartNoListener). JSON:
	// "timeout_s", seconds.
	Timeout time.Duration `json:"-"`
	// Detail is what the cause does not say, "" for nothing: why a
	// program was found missing before it was started, or from where
	// nothing accepted. It never holds the stderr tail.
	Detail string `json:"detail,omitempty"`
	// Code is the server's exit code when it exited (Cause StartMissing or
	// StartExited), -1 when a signal ended it or it did not exit.
	Code int `json:"code"`
	// StderrTail is the end of the server's stderr, "" when it printed
	// nothing.
	StderrTail string `json:"stderr_tail,omitempty"`
}

// Report is the failure as a proc.StartReport, whose Hint gives the
// advice that may follow it.
func (f *StartFailure) Report() proc.StartReport {
	return proc.StartReport{Target: f.Target, Cause: f.Cause, Exit: f.Exit, Addrs: f.Addrs, Timeout: f.Timeout,
		Note: f.Detail, StderrTail: f.StderrTail}
}

// Error is Report's text: the target and the cause on one line, then the
// end of its stderr (or that it wrote nothing there) when it ran.
func (f *StartFailure) Error() string { return f.Report().String() }

// startFailureJSON is StartFailure's JSON: its fields, the timeout in
// seconds.
type startFailureJSON struct {
	*plainStartFailure
	Timeout secs `json:"timeout_s,omitempty"`
}

type plainStartFailure StartFailure

// MarshalJSON writes the failure with its timeout in seconds
// ("timeout_s").
func (f StartFailure) MarshalJSON() ([]byte, error) {
	p := plainStartFailure(f)
	return json.Marshal(startFailureJSON{plainStartFailure: &p, Timeout: secs(f.Timeout)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *StartFailure) UnmarshalJSON(b []byte) error {
	v := startFailureJSON{plainStartFailure: (*plainStartFailure)(f)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	f.Timeout = time.Duration(v.Timeout)
	return nil
}

// startFailure classifies the error of a server's failed start (err, from
// proc.Start, wrapping a *proc.StartError, perhaps with context before
// it), for the server named target, waited for ready: an exit before it
// listened (a missing program when the status is 127 or 126) or no
// listener within ready. Any other error (Start's context ended, a
// process that could not be forked) is nil: not the server's failure.
func startFailure(err error, target string, ready time.Duration) *StartFailure {
	var se *proc.StartError
	if !errors.As(err, &se) {
		return nil
	}
	if ready <= 0 {
		ready = proc.DefaultReady
	}
	r := se.Report(target, ready)
	if r.Cause == "" {
		return nil
	}
	f := &StartFailure{Cause: r.Cause, Target: target, Exit: r.Exit, Addrs: r.Addrs, Code: se.Exit.Code,
		StderrTail: strings.TrimSpace(se.Exit.StderrTail)}
	if f.Cause == StartNoListener {
		f.Code, f.Timeout = -1, ready
	}
	return f
}
