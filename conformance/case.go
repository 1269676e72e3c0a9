package conformance

import (
	"strings"
	"time"
)

// Needs are what a case requires of an instance beyond a byte echo. A case
// whose needs the instance does not meet is skipped with the reason.
type Needs uint

const (
	// NeedReference: the reference protocol's semantics (frame limit,
	// REJECT) and a configuration to derive bounds from.
	NeedReference Needs = 1 << iota
	// NeedControl: the reference control address (PING class, STOP).
	NeedControl
	// NeedStats: the reactor's counters and histograms (live or final).
	NeedStats
	// NeedProcess: a process of its own (descriptors, memory, fd limit).
	NeedProcess
	// NeedStopContract: the run opted in to the stop contract
	// (Options.Stop), and the instance is a process the case can send
	// SIGTERM to and watch.
	NeedStopContract
)

// Case is one conformance case: a claim about a reactor, the reactor
// faults (mutants) that must make it fail, the bound it checks and where
// that bound comes from, and the code that checks it.
type Case struct {
	// ID is stable: a group letter and a number ("F1").
	ID    string
	Title string
	// Claim is what a correct reactor guarantees.
	Claim string
	// Mutants are the reactor faults (names as faults.ParseReactor
	// accepts them) that must make this case fail on the designs they
	// apply to, in the registry's order. cases.Catalogue fills it from the
	// mutant registry (reactors.Mutants, each entry's Cases): the registry
	// is the one place a mutant's cases are written. WireFaults are the
	// client-side faults the case applies.
	Mutants    []string
	WireFaults []string
	// BlackBoxBugs are the examples/echo --bug modes that must make this
	// case fail: for a claim about a server's own contract (SIGTERM, a
	// control address) that no reference reactor fault breaks, or broken
	// in a black box's way besides the mutants'.
	BlackBoxBugs []string
	// PeerBugs are the peers (examples/peers, by the name in their .peer
	// file) whose truth for this case is a failure: a real library's
	// program with the bug the case is about (a liburing echo built with
	// one of its -D variants), which its test runs and must see fail.
	PeerBugs []string
	// Bound is the case's limit and its derivation.
	Bound string
	Needs Needs
	Setup Setup
	// Timeout bounds the whole case (0: 30 s).
	Timeout time.Duration
	Run     func(c *C)
}

// Group is the case's group letter: F framing, R readiness, W write path,
// I identity, S scheduling and fairness, T timers, X stop, A admission,
// M multi-loop (what a server with several loops must keep), P completion
// model (what a proactor can lose that a readiness loop cannot).
func (cs Case) Group() string { return cs.ID[:1] }

func (cs Case) timeout() time.Duration {
	if cs.Timeout > 0 {
		return cs.Timeout
	}
	return 30 * time.Second
}

// unmet returns why inst cannot run the case under the stop contract
// stop, or "".
func (cs Case) unmet(inst Instance, stop StopContract) string {
	var why []string
	if cs.Needs&NeedReference != 0 && inst.Reference() == nil {
		why = append(why, "the reference protocol (frame limit, REJECT) and budgets")
	}
	if cs.Needs&NeedControl != 0 && inst.ControlAddr() == "" {
		why = append(why, "a control address (a reference reactor's, or a black box's {control} / REACTORLAB_CONTROL_LISTEN: conform --control)")
	}
	if cs.Needs&NeedStopContract != 0 {
		if stop == "" {
			why = append(why, "the stop contract, which is opt-in (conform --stop sigterm; Options.Stop)")
		} else if _, ok := inst.(Terminable); !ok {
			why = append(why, "a process of its own to send SIGTERM to")
		}
	}
	if cs.Needs&NeedStats != 0 && inst.Reference() == nil {
		why = append(why, "the reactor's internal counters")
	}
	if cs.Needs&NeedProcess != 0 {
		if u, err := inst.Usage(); err != nil || u.Fds < 0 {
			why = append(why, "a process of its own (descriptor count, memory, fd limit)")
		}
	}
	if len(why) == 0 {
		return ""
	}
	return "needs " + strings.Join(why, " and ")
}

// NeedsText says in words what the case needs beyond a byte echo.
func (cs Case) NeedsText() string {
	var out []string
	for _, n := range []struct {
		bit  Needs
		text string
	}{{NeedReference, "reference protocol"}, {NeedControl, "control address"}, {NeedStats, "internal counters"}, {NeedProcess, "own process"},
		{NeedStopContract, "the stop contract (--stop sigterm)"}} {
		if cs.Needs&n.bit != 0 {
			out = append(out, n.text)
		}
	}
	return strings.Join(out, ", ")
}
