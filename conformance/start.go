package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
)

// DefaultStartTimeout bounds a target's start when the caller gives no
// bound: from starting the instance to its addresses accepting
// connections.
const DefaultStartTimeout = 10 * time.Second

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

// stderrTailLines is how many lines of a target's stderr a StartError
// keeps.
const stderrTailLines = 20

// StartError is why a target could not be started: which of the causes,
// and what the target said. Its text is one line naming the target and the
// cause, followed by the end of the target's stderr (indented), or a note
// that it wrote nothing there.
type StartError struct {
	// Target is the target's name.
	Target string
	// Cause is why it did not start.
	Cause StartCause
	// Timeout is the bound the start was given (StartNoListener: the time
	// it was waited for).
	Timeout time.Duration
	// Addr is the address, or addresses joined by " and ", it was to
	// listen on; "" for a target without a process.
	Addr string
	// Exit is how the process ended ("exit status 3"); "" for
	// StartNoListener (it was killed) and StartFailed.
	Exit string
	// StderrTail is the end of the process's stderr (at most 20 lines,
	// trimmed); "" if it wrote nothing there or has no process.
	StderrTail string
	// Err is Target.Start's error.
	Err error
}

// Error names the target and the cause, then the stderr tail.
func (e *StartError) Error() string {
	var msg string
	switch e.Cause {
	case StartMissing:
		msg = fmt.Sprintf("%s: the program could not be run (%s: not found, or not executable)", e.Target, e.Exit)
	case StartExited:
		msg = fmt.Sprintf("%s: exited (%s) before it listened on %s", e.Target, e.Exit, e.Addr)
	case StartNoListener:
		msg = fmt.Sprintf("%s: nothing accepted connections on %s within %v (the program was running; it has been killed)", e.Target, e.Addr, e.Timeout)
	default:
		return fmt.Sprintf("%s: did not start: %v", e.Target, e.Err)
	}
	if e.StderrTail == "" {
		return msg + "; it wrote nothing on stderr"
	}
	return msg + "; its stderr ends:\n    " + strings.ReplaceAll(e.StderrTail, "\n", "\n    ")
}

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
		se.Addr = strings.Join(pe.Addrs, " and ")
		se.StderrTail = lastLines(pe.Exit.StderrTail, stderrTailLines)
		switch cause := pe.Cause(); cause {
		case StartMissing, StartExited:
			se.Cause, se.Exit = cause, pe.Exit.String()
		case StartNoListener:
			se.Cause = cause
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

// lastLines is the last n lines of s, trimmed.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
