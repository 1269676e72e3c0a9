//go:build linux

package timers

import "errors"

// Sentinel errors. Returned errors wrap them with context (the value that was
// refused), so callers test them with [errors.Is].
var (
	// ErrUnknownMode reports a mode name or value that is neither periodic nor
	// deadline.
	ErrUnknownMode = errors.New("timers: unknown mode")

	// ErrInvalidTick reports a Periodic tick that is not positive.
	ErrInvalidTick = errors.New("timers: invalid tick")
)
