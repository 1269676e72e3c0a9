package reactors

import (
	"fmt"
	"runtime"
	"strings"
)

// AssignMode is how mainsub's acceptor picks a sub-loop for each accepted
// connection.
type AssignMode string

const (
	// AssignRoundRobin deals connections to the sub-loops in turn.
	AssignRoundRobin AssignMode = "round-robin"
	// AssignLeastConns picks the sub-loop with the fewest open connections
	// (handoffs not yet registered included).
	AssignLeastConns AssignMode = "least-conns"
	// AssignLeastLoaded picks the sub-loop with the lowest recent busy
	// fraction plus the age of its oldest unread ingress item (in units of
	// 10 ms), ties by fewest connections: the notes' advice to assign by
	// loop utilisation and task-queue age, not by connection count alone.
	AssignLeastLoaded AssignMode = "least-loaded"
)

// AssignModes lists the accepted assignment modes, in help order.
var AssignModes = []AssignMode{AssignRoundRobin, AssignLeastConns, AssignLeastLoaded}

// ParseAssign reads Config.Assign: "" is AssignRoundRobin.
func ParseAssign(s string) (AssignMode, error) {
	if s == "" {
		return AssignRoundRobin, nil
	}
	for _, m := range AssignModes {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(AssignModes))
	for i, m := range AssignModes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("unknown assignment (accepted: %s)", strings.Join(names, ", "))
}

// DefaultLoops is the number of data loops a multi-loop design runs when
// Config.Loops is 0: one per CPU this process may use, at least 2 (a
// multi-loop design on one loop compares nothing).
func DefaultLoops() int { return max(2, runtime.NumCPU()) }

// DataLoops is cfg.Loops, or DefaultLoops() when it is 0.
func (c Config) DataLoops() int {
	if c.Loops > 0 {
		return c.Loops
	}
	return DefaultLoops()
}

// CheckOneLoop is the Check of the one-loop designs' multi-loop fields:
// it refuses Loops above 1, an assignment and a non-default Exclusive,
// naming the field and the designs that take it.
func CheckOneLoop(d DesignName, cfg Config) error {
	switch {
	case cfg.Loops > 1:
		return fmt.Errorf("%w: loops = %d: %s runs one data loop (several: %s, %s, %s, %s, %s)", ErrConfig, cfg.Loops, d, MainSub, ReusePort, SharedListener, UringReusePort, UringMainSub)
	case cfg.Assign != "":
		return fmt.Errorf("%w: assign = %q: only %s and %s assign connections to loops", ErrConfig, cfg.Assign, MainSub, UringMainSub)
	case cfg.Exclusive == "off":
		return fmt.Errorf("%w: exclusive = off: only %s shares a listener between loops", ErrConfig, SharedListener)
	}
	return nil
}

// CheckCompletionMultiLoop is the Check of the multi-loop proactor designs
// (uring-reuseport, uring-mainsub): what their epoll twin refuses —
// exclusive = off (neither shares a listener), and, with handoff, more than
// 255 sub-loops (the acceptor makes one more loop), without it an
// assignment (the kernel's flow hash assigns) — and urgent data, which the
// completion path does not read. Each error names the field.
func CheckCompletionMultiLoop(d DesignName, cfg Config, handoff bool) error {
	switch {
	case handoff && cfg.Loops > 255:
		return fmt.Errorf("%w: loops = %d: %s runs an acceptor beside its sub-loops (accepted: 0..255)", ErrConfig, cfg.Loops, d)
	case !handoff && cfg.Assign != "":
		return fmt.Errorf("%w: assign = %q: %s's connections are assigned by the kernel's flow hash (only %s and %s assign)", ErrConfig, cfg.Assign, d, MainSub, UringMainSub)
	case cfg.Exclusive == "off":
		return fmt.Errorf("%w: exclusive = off: %s's loops share no listener (only %s shares one)", ErrConfig, d, SharedListener)
	case cfg.Urgent == UrgentOOB:
		return fmt.Errorf("%w: urgent = oob: %s takes no urgent data (its receives are completions, with no read of the urgent mark)", ErrConfig, d)
	}
	return nil
}
