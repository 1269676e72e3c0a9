package conformance

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/target"
)

// DefaultStartTimeout bounds a target's start when the caller gives no
// bound: from starting the instance to its addresses accepting
// connections. It is proc.DefaultReady, the bound of every start in
// reactorlab (harness.DefaultStartTimeout is the same constant).
const DefaultStartTimeout = proc.DefaultReady

// StartInstance starts one instance of t for setup and returns it
// running, its addresses accepting connections. ctx and timeout (0:
// DefaultStartTimeout) bound the wait. On failure it returns an error
// wrapping ErrUnsupported when the target cannot honour setup, one
// wrapping ctx's error when ctx ended first, and otherwise a
// *target.StartError saying which cause (target.StartFailed for any other
// error of t.Start, which it wraps, as Err and in Detail; its Timeout is
// the start's bound; target.StartElsewhere when the wait ended with the
// process listening only on addresses it was not given); a process that
// had started has then been killed.
// t.Start must honour ctx's deadline for the bound to hold (Command,
// Process and InProcess do).
func StartInstance(ctx context.Context, t Target, setup Setup, timeout time.Duration) (Instance, error) {
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: not started: %w", t.Name(), err)
	}
	startCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	inst, err := t.Start(startCtx, setup)
	if err == nil {
		return inst, nil
	}
	switch {
	case errors.Is(err, ErrUnsupported):
		return nil, err
	case ctx.Err() != nil:
		return nil, fmt.Errorf("%s: interrupted while starting: %w", t.Name(), ctx.Err())
	}
	se := &target.StartError{Target: t.Name(), Cause: target.StartFailed, Err: err}
	var pe *proc.StartError
	if errors.As(err, &pe) {
		if f := pe.StartFailure(se.Target, timeout); f.Cause != "" {
			f.Err = err
			se = f
		} else {
			se.Addrs, se.Listening, se.Code, se.StderrTail, se.StdoutTail = f.Addrs, f.Listening, f.Code, f.StderrTail, f.StdoutTail
		}
	}
	// Start's own bound (this timeout) ending the wait is no listener too,
	// or a listener elsewhere when the process held one.
	if se.Cause == target.StartFailed && errors.Is(startCtx.Err(), context.DeadlineExceeded) {
		se.Cause = target.StartNoListener
		if len(se.Listening) > 0 {
			se.Cause = target.StartElsewhere
		}
	}
	if se.Cause == target.StartFailed {
		se.Detail = err.Error()
	}
	se.Timeout = timeout
	return nil, se
}

// CheckStart starts one instance of target with no case's setup, waits at
// most timeout (0: DefaultStartTimeout) for it to accept connections, and
// stops it. It is the check RunAll and Run make once before any case, so
// that a target that cannot start gives one failure saying why (with its
// stderr), not one per case, each waiting out its bound. It returns nil,
// a *target.StartError, or an error wrapping ctx's when ctx ended first. How the
// instance ends when stopped is not judged here: the cases judge it.
func CheckStart(ctx context.Context, target Target, timeout time.Duration) error {
	inst, err := StartInstance(ctx, target, Setup{}, timeout)
	if err != nil {
		return err
	}
	_, _ = inst.Stop()
	return nil
}
