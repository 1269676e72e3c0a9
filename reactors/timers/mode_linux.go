//go:build linux

package timers

import (
	"fmt"
	"strconv"
	"time"
)

// Mode selects how a [Set] turns its deadlines into wakeups of the owner loop.
// The zero Mode is not a valid mode.
type Mode uint8

const (
	// Periodic makes the timerfd expire every tick from [New] until [Set.Close],
	// whether or not a timer is due: idle wakeups, but every tick re-checks the loop.
	Periodic Mode = iota + 1

	// Deadline arms a one-shot timerfd to the nearest deadline in the set, re-arms it
	// only when the nearest deadline changes and disarms it when the set is empty:
	// no idle wakeups, at the cost of a timerfd_settime call per change of the
	// nearest deadline.
	Deadline
)

// DefaultTick is the conventional Periodic tick of the owner loop.
const DefaultTick = time.Millisecond

// ParseMode returns the Mode named s: "periodic" or "deadline" (exact, lower case),
// the same names [Mode.String] returns. Any other s yields an error wrapping
// [ErrUnknownMode] that quotes s and lists the accepted names.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "periodic":
		return Periodic, nil
	case "deadline":
		return Deadline, nil
	}
	return 0, fmt.Errorf("%w %q (accepted: periodic, deadline)", ErrUnknownMode, s)
}

// String returns "periodic" or "deadline", which [ParseMode] accepts, and
// "Mode(N)" for any other value.
func (m Mode) String() string {
	switch m {
	case Periodic:
		return "periodic"
	case Deadline:
		return "deadline"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// valid reports whether m is Periodic or Deadline.
func (m Mode) valid() bool { return m == Periodic || m == Deadline }
