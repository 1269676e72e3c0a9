package lab

import (
	"errors"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/target"
)

// startFailure classifies the error of a server's failed start (err, from
// proc.Start, wrapping a *proc.StartError, perhaps with context before
// it), for the server named name, waited for ready: an exit before it
// listened (a missing program when the status is 127 or 126) or no
// listener within ready. Any other error (Start's context ended, a
// process that could not be forked) is nil: not the server's failure.
// The failure has no Err: it crosses the lab child's report as JSON.
func startFailure(err error, name string, ready time.Duration) *target.StartError {
	var se *proc.StartError
	if !errors.As(err, &se) {
		return nil
	}
	if ready <= 0 {
		ready = proc.DefaultReady
	}
	f := se.StartFailure(name, ready)
	if f.Cause == "" {
		return nil
	}
	return f
}
