package reactors

import (
	"fmt"
	"strconv"
	"strings"
)

// SchedClass is a Linux scheduling class a loop thread can run in.
type SchedClass string

// The scheduling classes of ControlSched. SchedOther is the default
// time-sharing class (SCHED_OTHER at nice 0, as the process started);
// SchedNice is SCHED_OTHER at a nice value; SchedFIFO and SchedRR are the
// real-time classes, whose threads run before every SCHED_OTHER thread on
// their CPU the moment they are runnable.
const (
	SchedOther SchedClass = "other"
	SchedNice  SchedClass = "nice"
	SchedFIFO  SchedClass = "fifo"
	SchedRR    SchedClass = "rr"
)

// Sched is a parsed ControlSched: a class and its one parameter (the nice
// value for SchedNice, -20..19; the real-time priority for SchedFIFO and
// SchedRR, 1..99; 0 for SchedOther). The zero value is not valid; use
// ParseSched.
type Sched struct {
	Class SchedClass
	Value int
}

// RealTime reports whether s is a real-time class (fifo or rr), which the
// real-time hold (Config.RTHold) guards.
func (s Sched) RealTime() bool { return s.Class == SchedFIFO || s.Class == SchedRR }

// String is the form ParseSched reads: "other", "nice:-5", "fifo:10".
func (s Sched) String() string {
	if s.Class == SchedOther {
		return string(SchedOther)
	}
	return string(s.Class) + ":" + strconv.Itoa(s.Value)
}

// SchedForms lists the forms ParseSched accepts, for help and errors.
const SchedForms = "other, nice:N (N in -20..19), fifo:P or rr:P (P in 1..99)"

// ParseSched reads a scheduling class as ControlSched gives it: "other",
// "nice:N", "fifo:P" or "rr:P". Errors name the form and the accepted
// range (not the text given: the caller names it).
func ParseSched(s string) (Sched, error) {
	class, param, hasParam := strings.Cut(s, ":")
	switch SchedClass(class) {
	case SchedOther:
		if hasParam {
			return Sched{}, fmt.Errorf("other takes no parameter (accepted: %s)", SchedForms)
		}
		return Sched{Class: SchedOther}, nil
	case SchedNice, SchedFIFO, SchedRR:
	default:
		return Sched{}, fmt.Errorf("unknown scheduling class %q (accepted: %s)", class, SchedForms)
	}
	lo, hi := 1, 99
	if SchedClass(class) == SchedNice {
		lo, hi = -20, 19
	}
	n, err := strconv.Atoi(param)
	if !hasParam || err != nil || n < lo || n > hi {
		return Sched{}, fmt.Errorf("%s needs a value in %d..%d (accepted: %s)", class, lo, hi, SchedForms)
	}
	return Sched{Class: SchedClass(class), Value: n}, nil
}
