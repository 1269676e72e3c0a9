package harness

import (
	"errors"
	"fmt"
	"strings"

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
// and reaped. It is an error; LabResult.StartFailure carries it across
// the lab child's report, and RunCell's error wraps it.
type StartFailure struct {
	Cause StartCause `json:"cause"`
	// Detail is what the starter found, in its words, without the stderr
	// tail ("start /bin/sh: process exited (exit status 0) before
	// 198.18.0.1:9000 accepted").
	Detail string `json:"detail"`
	// Code is the server's exit code when it exited (Cause StartMissing or
	// StartExited), -1 when a signal ended it or it did not exit.
	Code int `json:"code"`
	// StderrTail is the end of the server's stderr, "" when it printed
	// nothing.
	StderrTail string `json:"stderr_tail,omitempty"`
}

// Error says the cause and the detail, on one line; the stderr tail is
// left to the caller, which prints it apart.
func (f *StartFailure) Error() string {
	return fmt.Sprintf("the server could not be started (%s): %s", f.Cause, f.Detail)
}

// startFailure classifies the error of a server's failed start (err, from
// proc.Start, wrapping a *proc.StartError, perhaps with context before
// it): an exit before it listened (a missing program when the status is
// 127 or 126) or no listener within its time. Any other error (Start's
// context ended, a process that could not be forked) is nil: not the
// server's failure.
func startFailure(err error) *StartFailure {
	var se *proc.StartError
	if !errors.As(err, &se) {
		return nil
	}
	detail, _, _ := strings.Cut(err.Error(), "; stderr:\n")
	f := &StartFailure{Cause: se.Cause(), Detail: strings.TrimSpace(detail), Code: se.Exit.Code, StderrTail: strings.TrimSpace(se.Exit.StderrTail)}
	switch f.Cause {
	case "":
		return nil
	case StartNoListener:
		f.Code = -1
	}
	return f
}
