package reactors

import (
	"fmt"
	"strconv"
	"strings"
)

// Faults switch a reference reactor into a known-buggy mutant. Each field is
// read at one hook point; all false/zero is the correct reactor. They exist
// so the conformance suite can prove it catches each bug.
type Faults struct {
	// MissedRearmEvery makes ONESHOT skip the rearm on every Nth turn (0: off).
	MissedRearmEvery int
	// NoDrain makes ET read once per edge and never requeue.
	NoDrain bool
	// FdIdentity routes offloaded results by fd number, ignoring generations.
	FdIdentity bool
	// PermanentEPOLLOUT keeps EPOLLOUT registered with an empty out-queue.
	PermanentEPOLLOUT bool
	// NoBudget serves a source until EAGAIN, ignoring count, byte and time budgets.
	NoBudget bool
	// UnboundedOutQueue removes watermarks and the hard cap.
	UnboundedOutQueue bool
	// LostWakeup drains one ingress budget per eventfd wakeup and sleeps even
	// when items remain.
	LostWakeup bool
	// NoFrameLimit allocates whatever a frame header declares.
	NoFrameLimit bool
	// DropPartial discards, at the end of every source turn, the bytes of an
	// incomplete frame left in the input buffer, as if each read carried
	// whole frames: a frame split across reads is lost or corrupts the stream.
	DropPartial bool
	// FrameLimitOffByOne refuses a frame whose whole size equals MaxFrame
	// (">=" for ">"); frames of MaxFrame-1 bytes still pass.
	FrameLimitOffByOne bool
	// DropShortWrite ignores write(2)'s count when flushing an out-queue: the
	// unwritten tail of a short write is dropped as if it had been sent.
	DropShortWrite bool
	// AcceptOnceET registers listeners edge-triggered and accepts one
	// connection per readiness event, so connections that arrive together
	// wait in the backlog until another connect raises a new edge. Under
	// ONESHOT the edge replaces the one-shot rearm (a rearm would re-report
	// the backlog and hide the bug): the listener is EPOLLET and never rearmed.
	AcceptOnceET bool
	// NoEMFILEShed ends the accept turn on EMFILE/ENFILE without shedding a
	// connection (reserve fd) or pausing the listener, so the level-triggered
	// listener stays readable and the loop spins while the fd table is full.
	NoEMFILEShed bool
	// LeakPending forgets a connection closed while work is still pending
	// for it (a non-empty out-queue, or offloaded callbacks in flight): the
	// peer reset it, or a write failed after its EOF. The connection leaves
	// the epoll set and the ready queues, but its fd stays open and its slot
	// allocated until the reactor exits, and ConnsClosed does not count it.
	// (Any close with work pending takes this path, whatever its cause.)
	LeakPending bool
	// SilentAfterStop drops DATA frames read after a STOP was requested:
	// no REJECT is sent and the ledger does not count them.
	SilentAfterStop bool
	// StopWhenIdle checks for a requested stop only after a round that did
	// no work, and keeps admission open until then: under steady load the
	// stop is never observed and no STOP_ACK comes while the load lasts.
	StopWhenIdle bool
	// FreeAtEOF closes a connection as soon as a read returns EOF (the peer
	// shut down its write side), before the turn's flush, dropping the
	// echoes still in its out-queue (as the libevent book's echo server
	// frees the bufferevent at EOF). The correct reactor closes it only
	// once the out-queue has drained.
	FreeAtEOF bool
	// FlushSpinAtEOF writes the out-queue in a loop when a read returns EOF
	// with echoes still queued, retrying at once on EAGAIN (gnet issue
	// #341), until the queue is empty, a write fails, or a stop is
	// requested: while the peer does not read, the loop's thread serves
	// nothing else.
	FlushSpinAtEOF bool
}

// Any reports whether any fault is switched on.
func (f Faults) Any() bool { return f != Faults{} }

// FaultNames lists the reactor faults ParseFault accepts.
var FaultNames = []string{"missed-rearm[:every=N]", "no-drain", "fd-identity", "permanent-epollout", "no-budget", "unbounded-outq", "lost-wakeup", "no-frame-limit",
	"drop-partial", "limit-off-by-one", "drop-short-write", "accept-once-et", "no-emfile-shed", "leak-pending", "silent-after-stop", "stop-when-idle",
	"free-at-eof", "flush-spin-at-eof"}

// ParseFault switches on the reactor fault named by spec ("name" or
// "name:k=v") in f. The error lists the accepted names.
func ParseFault(spec string, f *Faults) error {
	name, params, _ := strings.Cut(spec, ":")
	if name != "missed-rearm" && params != "" {
		return fmt.Errorf("%w: fault %q takes no parameters", ErrConfig, name)
	}
	switch name {
	case "missed-rearm":
		f.MissedRearmEvery = 7
		if params != "" {
			k, v, _ := strings.Cut(params, "=")
			n, err := strconv.Atoi(v)
			if k != "every" || err != nil || n < 1 {
				return fmt.Errorf("%w: fault missed-rearm: parameter %q (accepted: every=N with N >= 1)", ErrConfig, params)
			}
			f.MissedRearmEvery = n
		}
	case "no-drain":
		f.NoDrain = true
	case "fd-identity":
		f.FdIdentity = true
	case "permanent-epollout":
		f.PermanentEPOLLOUT = true
	case "no-budget":
		f.NoBudget = true
	case "unbounded-outq":
		f.UnboundedOutQueue = true
	case "lost-wakeup":
		f.LostWakeup = true
	case "no-frame-limit":
		f.NoFrameLimit = true
	case "drop-partial":
		f.DropPartial = true
	case "limit-off-by-one":
		f.FrameLimitOffByOne = true
	case "drop-short-write":
		f.DropShortWrite = true
	case "accept-once-et":
		f.AcceptOnceET = true
	case "no-emfile-shed":
		f.NoEMFILEShed = true
	case "leak-pending":
		f.LeakPending = true
	case "silent-after-stop":
		f.SilentAfterStop = true
	case "stop-when-idle":
		f.StopWhenIdle = true
	case "free-at-eof":
		f.FreeAtEOF = true
	case "flush-spin-at-eof":
		f.FlushSpinAtEOF = true
	default:
		return fmt.Errorf("%w: unknown fault %q (accepted: %s)", ErrConfig, spec, strings.Join(FaultNames, ", "))
	}
	return nil
}
