package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
)

// DefaultStartTimeout bounds a target's start when the caller gives no
// bound: from starting the instance to its addresses accepting
// connections. It is proc.DefaultReady, the bound of every start in
// reactorlab (harness.DefaultStartTimeout is the same constant).
const DefaultStartTimeout = proc.DefaultReady

// StartCause says why a target could not be started: for a process
// target (Command, Process), proc's classification of its failed start;
// StartFailed for any other error of Target.Start.
type StartCause = proc.StartCause

// The causes of a failed start. The first three are a process target's,
// classified by proc.StartError.Cause: the program could not be run (exit
// status 127 or 126), it exited before it accepted connections, or nothing
// accepted on its address within the start timeout (it was killed).
const (
	StartMissing    = proc.StartMissing
	StartExited     = proc.StartExited
	StartNoListener = proc.StartNoListener
	// StartFailed: Target.Start returned another error (an in-process
	// reactor refusing its configuration, no free port).
	StartFailed StartCause = "failed"
)

// StartError is why a target could not be started: which of the causes,
// and what the target said. Its text is proc.StartReport's, the wording
// every reactorlab command gives a failed start: one line naming the
// target and the cause, followed by the end of the target's stderr
// (indented), or a note that it wrote nothing there.
type StartError struct {
	// Target is the target's name.
	Target string
	// Cause is why it did not start.
	Cause StartCause
	// Timeout is the bound the start was given (StartNoListener: the time
	// it was waited for).
	Timeout time.Duration
	// Addrs are the addresses it was to listen on, in order; nil for a
	// target without a process.
	Addrs []string
	// Exit is how the process ended ("exit status 3"); "" for
	// StartNoListener (it was killed) and StartFailed.
	Exit string
	// StderrTail is the end of the process's stderr (at most
	// proc.StderrLines lines, trimmed); "" if it wrote nothing there or
	// has no process.
	StderrTail string
	// Err is Target.Start's error.
	Err error
}

// Report is the error as proc words a failed start (StartFailed: "did not
// start" and Err); Report().Hint gives the advice that may follow it.
func (e *StartError) Report() proc.StartReport {
	r := proc.StartReport{Target: e.Target, Cause: e.Cause, Exit: e.Exit, Addrs: e.Addrs, Timeout: e.Timeout, StderrTail: e.StderrTail}
	if e.Cause != StartMissing && e.Cause != StartExited && e.Cause != StartNoListener && e.Err != nil {
		r.Note = e.Err.Error()
	}
	return r
}

// Error names the target and the cause, then the stderr tail: Report's
// text.
func (e *StartError) Error() string { return e.Report().String() }

// Unwrap returns Target.Start's error.
func (e *StartError) Unwrap() error { return e.Err }

// StartInstance starts one instance of target for setup and returns it
// running, its addresses accepting connections. ctx and timeout (0:
// DefaultStartTimeout) bound the wait. On failure it returns an error
// wrapping ErrUnsupported when the target cannot honour setup, one
// wrapping ctx's error when ctx ended first, and otherwise a *StartError
// saying which cause; a process that had started has then been killed.
// Target.Start must honour ctx's deadline for the bound to hold (Command,
// Process and InProcess do).
func StartInstance(ctx context.Context, target Target, setup Setup, timeout time.Duration) (Instance, error) {
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: not started: %w", target.Name(), err)
	}
	startCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	inst, err := target.Start(startCtx, setup)
	if err == nil {
		return inst, nil
	}
	switch {
	case errors.Is(err, ErrUnsupported):
		return nil, err
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: interrupted while starting: %w", target.Name(), ctx.Err())
	}
	se := &StartError{Target: target.Name(), Cause: StartFailed, Timeout: timeout, Err: err}
	var pe *proc.StartError
	if errors.As(err, &pe) {
		r := pe.Report(se.Target, timeout)
		se.Addrs, se.StderrTail = r.Addrs, r.StderrTail
		if r.Cause != "" {
			se.Cause, se.Exit = r.Cause, r.Exit
		}
	}
	// Start's own bound (this timeout) ending the wait is no listener too.
	if se.Cause == StartFailed && errors.Is(startCtx.Err(), context.DeadlineExceeded) {
		se.Cause = StartNoListener
	}
	return nil, se
}

// CheckStart starts one instance of target with no case's setup, waits at
// most timeout (0: DefaultStartTimeout) for it to accept connections, and
// stops it. It is the check RunAll and Run make once before any case, so
// that a target that cannot start gives one failure saying why (with its
// stderr), not one per case, each waiting out its bound. It returns nil,
// a *StartError, or an error wrapping ctx's when ctx ended first. How the
// instance ends when stopped is not judged here: the cases judge it.
func CheckStart(ctx context.Context, target Target, timeout time.Duration) error {
	inst, err := StartInstance(ctx, target, Setup{}, timeout)
	if err != nil {
		return err
	}
	_, _ = inst.Stop()
	return nil
}
