package reactors

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Faults switch a reference reactor into a known-buggy mutant. Each field is
// read at one hook point; all false/zero is the correct reactor. They exist
// so the conformance suite can prove it catches each bug. Every field is
// the hook of exactly one entry of the registry, [Mutants], which says how
// a spec switches it on and where it must be caught.
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
	// BlockOnFullWrite writes an out-queue the socket would not take at
	// once by waiting in poll(2) for the socket to take it, on the loop's
	// thread, as a loop that switches a connection to blocking writes
	// once it sees EAGAIN: while that peer does not read, the loop serves
	// nothing else. The wait ends when the queue is written, a write
	// fails (the peer reset), or a stop is requested.
	BlockOnFullWrite bool
	// AdmissionIgnored admits every DATA frame while the admission limit
	// (Config.Admission) is engaged, as a limiter that counts saturation
	// but never refuses: past saturation the data plane takes every
	// request and the control path waits behind them.
	AdmissionIgnored bool
	// HandoffDropWhenFull makes mainsub's acceptor close an accepted
	// connection when the sub-loop the assignment picked has a full
	// ingress, instead of trying the others and keeping it until one has
	// room: under an accept storm connections are lost.
	HandoffDropWhenFull bool
	// ServeOnTwoLoops registers every new data connection on a second data
	// loop as well (a duplicate of its descriptor, through that loop's
	// ingress), as a reactor whose loops all watch one socket: two loops
	// read and write it at once, and its frames are split between them.
	ServeOnTwoLoops bool
	// FdIdentityAcrossLoops routes an offloaded result to whichever loop
	// registered a connection on its fd number last, and delivers it there
	// to whoever holds that number, ignoring generations: a stale result
	// crosses to a reused fd on another loop.
	FdIdentityAcrossLoops bool
	// NoAcceptCoordination lets every loop wait on the data listener with
	// nothing to pick one: shared registers it without EPOLLEXCLUSIVE even
	// when exclusive is on, and mainsub's sub-loops watch (and accept from)
	// the acceptor's listener too (tidwall/evio #73). Each connection
	// wakes every loop, and all but one find the backlog empty.
	NoAcceptCoordination bool
	// StopWakesOneLoop leaves a STOP frame to the loop that read it: the
	// other loops are not woken, so an idle loop, blocked in epoll_wait
	// until an event, never sees the stop and STOP_ACK never comes.
	StopWakesOneLoop bool
	// RingEnobufsEOF takes a multishot receive that ended with ENOBUFS
	// (the provided buffer ring was empty) for the peer's end of stream,
	// as liburing's echo idiom gets wrong when -ENOBUFS falls into the
	// "res <= 0: close" branch: under a burst larger than the buffer ring
	// the connections whose receive found no buffer are shut down
	// mid-stream, their unread bytes never echoed.
	RingEnobufsEOF bool
	// RingOverflowIgnored gives the ring a 16-entry completion queue and
	// loses every completion reaped in a round after the kernel's overflow
	// list was flushed into the queue: as a kernel without
	// IORING_FEAT_NODROP drops them (the receives' data, a multishot
	// receive's last completion) and the loop never notices. Whenever the
	// queue overflowed (Counters.CQOverflowFlushes > 0), something is lost.
	RingOverflowIgnored bool
	// RingCloseNoCancel closes a connection's descriptor at once, with its
	// operations still in flight and never cancelled, and routes every
	// completion of a connection by the descriptor number in its
	// user_data: an old connection's receive, still armed (the ring holds
	// its socket open), delivers its bytes to whichever new connection got
	// that number.
	RingCloseNoCancel bool
}

// Any reports whether any fault is switched on.
func (f Faults) Any() bool { return f != Faults{} }

// Mutant is one entry of the mutant registry ([Mutants]): a reactor
// fault, the [Faults] field (its hook) it switches on, where the
// conformance suite must catch it and with which cases. The registry is
// the one place a mutant is described: [FaultNames], [ParseFault],
// [Faults.Specs], package faults' reactor faults and the fault-hook test's
// rows all come from it. The loop never reads a Mutant: it reads the
// Faults fields, a plain branch on its own copy of the configuration.
//
// Only the entries of Mutants switch anything: the field accessors are
// unexported, so a Mutant built elsewhere switches nothing.
type Mutant struct {
	// Name is the mutant's name as ParseFault takes it ("no-drain").
	Name string
	// Hook names the Faults field it switches on ("NoDrain").
	Hook string
	// Param names its one parameter ("every"), or is empty when it takes
	// none; a spec gives it as "name:param=N" with N >= 1.
	Param string
	// Default is the parameter's value when a spec gives none (>= 1;
	// unused without a Param).
	Default int
	// Designs are the designs the conformance suite must catch it on, in
	// the registry's order (designs.Names); nil means every design.
	Designs []DesignName
	// Cases are the conformance cases that must fail on each design in
	// Designs, apart from Holds.
	Cases []string
	// Holds lists, per design, the cases of Cases that the mutant leaves
	// standing there by design (Scope says why).
	Holds map[DesignName][]string
	// Doc is its one-line description.
	Doc string
	// Scope says why the mutant is not caught everywhere (designs left out
	// of Designs, cases in Holds), or is empty when it is caught on every
	// design with every case.
	Scope string

	flag  func(*Faults) *bool // the hook of a mutant without a parameter
	count func(*Faults) *int  // the hook of a mutant with one (Param)
}

// Usage is the mutant's name with its parameter's form, as FaultNames
// lists it ("missed-rearm[:every=N]").
func (m Mutant) Usage() string {
	if m.Param == "" {
		return m.Name
	}
	return m.Name + "[:" + m.Param + "=N]"
}

// Spec is the ParseFault spec that switches the mutant on with parameter
// n (n <= 0: the default; n is ignored without a Param).
func (m Mutant) Spec(n int) string {
	if m.Param == "" {
		return m.Name
	}
	return m.Name + ":" + m.Param + "=" + strconv.Itoa(m.param(n))
}

// Switch turns the mutant on in f, with parameter n (n <= 0: the
// default; n is ignored without a Param).
func (m Mutant) Switch(f *Faults, n int) {
	switch {
	case m.count != nil:
		*m.count(f) = m.param(n)
	case m.flag != nil:
		*m.flag(f) = true
	}
}

// Value reports the mutant's state in f: 0 when off, its parameter when
// on with one, and 1 when on without.
func (m Mutant) Value(f Faults) int {
	switch {
	case m.count != nil:
		return max(*m.count(&f), 0)
	case m.flag != nil && *m.flag(&f):
		return 1
	}
	return 0
}

// AppliesTo reports whether the conformance suite must catch the mutant
// on design d.
func (m Mutant) AppliesTo(d DesignName) bool {
	return m.Designs == nil || slices.Contains(m.Designs, d)
}

// CasesFor lists the cases that must fail on design d: Cases less d's
// Holds, or nil when the mutant does not apply to d. The slice is the
// caller's.
func (m Mutant) CasesFor(d DesignName) []string {
	if !m.AppliesTo(d) {
		return nil
	}
	holds := m.Holds[d]
	return slices.DeleteFunc(slices.Clone(m.Cases), func(c string) bool { return slices.Contains(holds, c) })
}

func (m Mutant) param(n int) int {
	if n <= 0 {
		return m.Default
	}
	return n
}

// parse switches the mutant on in f from a spec's parameters (the text
// after "name:"; empty: the default).
func (m Mutant) parse(params string, f *Faults) error {
	if params == "" {
		m.Switch(f, 0)
		return nil
	}
	k, v, _ := strings.Cut(params, "=")
	n, err := strconv.Atoi(v)
	if k != m.Param || err != nil || n < 1 {
		return fmt.Errorf("%w: fault %s: parameter %q (accepted: %s=N with N >= 1)", ErrConfig, m.Name, params, m.Param)
	}
	m.Switch(f, n)
	return nil
}

// The designs with an offload pool (ONESHOT runs callbacks on its own
// worker threads), those that register sources level-triggered, and those
// with a loop that serves sources one turn at a time (not ONESHOT, whose
// worker threads share the sources).
var (
	pooledDesigns    = []DesignName{LT, ET, Prio, PrioThread}
	levelTrigDesigns = []DesignName{LT, OneShot, Prio, PrioThread}
	turnDesigns      = []DesignName{LT, ET, Prio, PrioThread}
	// oneLoopDesigns: the mutants whose hook is in the loop every design
	// shares are held to account on the designs whose policies differ
	// (the first five); the multi-loop designs run lt's policy on each of
	// their loops, so there they would repeat lt's rows (see multiLoopScope).
	oneLoopDesigns = []DesignName{LT, ET, OneShot, Prio, PrioThread}
	multiLoop      = []DesignName{MainSub, ReusePort, SharedListener}
	// completionDesigns serve their connections through an io_uring.
	completionDesigns = []DesignName{Uring, UringReusePort, UringMainSub}
)

// completionScope is the Scope of a mutant of the completion path.
const completionScope = "the hook is in the completion path (Layout.Completion): only uring, uring-reuseport and uring-mainsub serve their connections through an io_uring"

// multiLoopScope is the Scope of a shared-loop mutant not run on the
// multi-loop designs.
const multiLoopScope = "not run on mainsub, reuseport and shared: their loops run lt's policy, and the hook is in the loop every design shares, " +
	"so the rows would repeat lt's (the multi-loop designs are held to the whole catalogue clean, and their own mutants below)"

// Mutants is the mutant registry: every reactor fault, one entry each, in
// the order FaultNames lists them. Each names a distinct Faults field, and
// every Faults field has its entry (TestMutantRegistry). Read-only.
var Mutants = []Mutant{{
	Name: "missed-rearm", Hook: "MissedRearmEvery", Param: "every", Default: 7,
	count:   func(f *Faults) *int { return &f.MissedRearmEvery },
	Designs: []DesignName{OneShot}, Cases: []string{"R2"},
	Doc:   "ONESHOT skips the rearm every N-th turn (default 7): the source never reports again and its connection stalls",
	Scope: "only ONESHOT rearms a source",
}, {
	Name: "no-drain", Hook: "NoDrain", flag: func(f *Faults) *bool { return &f.NoDrain },
	Designs: []DesignName{ET}, Cases: []string{"F2", "R1"},
	Doc:   "ET reads once per edge and never requeues: work left after a budget waits for an edge that never comes",
	Scope: "only ET depends on its ready queue to serve what is left after a budget",
}, {
	Name: "fd-identity", Hook: "FdIdentity", flag: func(f *Faults) *bool { return &f.FdIdentity },
	Designs: pooledDesigns, Cases: []string{"I1"},
	Doc:   "offloaded results are routed by fd number, ignoring generations: a result reaches whichever connection now has that fd",
	Scope: "ONESHOT has no offload pool: its callbacks run inline, so no result outlives its connection",
}, {
	Name: "permanent-epollout", Hook: "PermanentEPOLLOUT", flag: func(f *Faults) *bool { return &f.PermanentEPOLLOUT },
	Designs: levelTrigDesigns, Cases: []string{"W2"},
	Doc:   "EPOLLOUT stays registered with an empty out-queue: a level-triggered loop spins while idle",
	Scope: "under ET an EPOLLOUT fires once: harmless",
}, {
	Name: "no-budget", Hook: "NoBudget", flag: func(f *Faults) *bool { return &f.NoBudget },
	Designs: turnDesigns, Cases: []string{"S1", "S2", "T1"}, Holds: map[DesignName][]string{PrioThread: {"S2"}},
	Doc: "a source is served until EAGAIN or backpressure, ignoring the count, byte and time budgets: one hot source holds the loop for seconds",
	Scope: "where control has a thread of its own (prio-thread), a PING is read at once, so S2 holds there. " +
		"Under oneshot any idle worker thread serves the light sources, the control connection and its timers between two hot turns, " +
		"whose length varies with where a read first finds the socket empty: the mutant escaped S1/S2 in 3 of 6 runs and T1 in 1 of 4 under load, " +
		"so it is not counted there. (A STOP is caught mid-turn, since admission closes at once: no-budget delays STOP only by chance, " +
		"so X1 has its own mutant, stop-when-idle.)",
}, {
	Name: "unbounded-outq", Hook: "UnboundedOutQueue", flag: func(f *Faults) *bool { return &f.UnboundedOutQueue },
	Designs: oneLoopDesigns, Cases: []string{"W1"},
	Doc:   "the out-queue has no watermarks and no hard cap: a client that does not read makes the server buffer everything it sends",
	Scope: multiLoopScope,
}, {
	Name: "lost-wakeup", Hook: "LostWakeup", flag: func(f *Faults) *bool { return &f.LostWakeup },
	Designs: pooledDesigns, Cases: []string{"S3"},
	Doc:   "one ingress budget is drained per eventfd wakeup and the loop sleeps with items left: results from the pool are stranded",
	Scope: "ONESHOT has no offload pool, so no ingress of results",
}, {
	Name: "no-frame-limit", Hook: "NoFrameLimit", flag: func(f *Faults) *bool { return &f.NoFrameLimit },
	Designs: oneLoopDesigns, Cases: []string{"F4"},
	Doc:   "whatever a frame header declares is allocated",
	Scope: multiLoopScope,
}, {
	Name: "drop-partial", Hook: "DropPartial", flag: func(f *Faults) *bool { return &f.DropPartial },
	Designs: oneLoopDesigns, Cases: []string{"F1"},
	Doc:   "an incomplete frame left in the input buffer at the end of a turn is discarded",
	Scope: multiLoopScope,
}, {
	Name: "limit-off-by-one", Hook: "FrameLimitOffByOne", flag: func(f *Faults) *bool { return &f.FrameLimitOffByOne },
	Designs: oneLoopDesigns, Cases: []string{"F3"},
	Doc:   "a frame of exactly the maximum size is refused",
	Scope: multiLoopScope,
}, {
	Name: "drop-short-write", Hook: "DropShortWrite", flag: func(f *Faults) *bool { return &f.DropShortWrite },
	Designs: oneLoopDesigns, Cases: []string{"W3"},
	Doc:   "the unwritten tail of a short write is dropped as if it had been sent",
	Scope: multiLoopScope,
}, {
	Name: "accept-once-et", Hook: "AcceptOnceET", flag: func(f *Faults) *bool { return &f.AcceptOnceET },
	Designs: []DesignName{LT, ET, OneShot, Prio, PrioThread, MainSub, SharedListener}, Cases: []string{"R3"},
	Doc: "listeners are registered edge-triggered and accept one connection per event: a storm leaves connections in the backlog",
	Scope: "not run on reuseport: each of its loops accepts from a listener of its own on lt's path (caught there), and the 5 s R3 waits " +
		"out per row is kept for the accept paths that differ (mainsub's acceptor, shared's listener in every set)",
}, {
	Name: "no-emfile-shed", Hook: "NoEMFILEShed", flag: func(f *Faults) *bool { return &f.NoEMFILEShed },
	Designs: oneLoopDesigns, Cases: []string{"R4"},
	Doc:   "EMFILE ends the accept turn and nothing more: the level-triggered listener stays readable and the loop spins while the descriptor table is full",
	Scope: multiLoopScope,
}, {
	Name: "leak-pending", Hook: "LeakPending", flag: func(f *Faults) *bool { return &f.LeakPending },
	Designs: oneLoopDesigns, Cases: []string{"I2"},
	Doc:   "a connection that goes away with work pending is forgotten, leaking its descriptor and slot",
	Scope: multiLoopScope,
}, {
	Name: "silent-after-stop", Hook: "SilentAfterStop", flag: func(f *Faults) *bool { return &f.SilentAfterStop },
	Designs: oneLoopDesigns, Cases: []string{"X2"},
	Doc:   "DATA frames read after a STOP are dropped, without REJECT and uncounted",
	Scope: multiLoopScope,
}, {
	Name: "stop-when-idle", Hook: "StopWhenIdle", flag: func(f *Faults) *bool { return &f.StopWhenIdle },
	Designs: turnDesigns, Cases: []string{"X1"},
	Doc: "a requested stop is looked for only after a round that did no work, and admission stays open until then: under steady load STOP is never observed",
	Scope: "ONESHOT's worker threads share the sources, so each has idle rounds under load and sees the stop anyway " +
		"(measured: the mutant escaped X1 in 1 of 10 runs): it is not counted there",
}, {
	Name: "free-at-eof", Hook: "FreeAtEOF", flag: func(f *Faults) *bool { return &f.FreeAtEOF },
	Designs: oneLoopDesigns, Cases: []string{"I3"},
	Doc: "a connection is closed as soon as a read returns EOF, dropping the echoes still queued for it and those read in the same turn " +
		"(as the libevent book's echo server frees its bufferevent at EOF)",
	Scope: multiLoopScope,
}, {
	Name: "flush-spin-at-eof", Hook: "FlushSpinAtEOF", flag: func(f *Faults) *bool { return &f.FlushSpinAtEOF },
	Designs: turnDesigns, Cases: []string{"W4"},
	Doc: "a read that returns EOF with echoes queued writes the out-queue in a loop, retrying at once on EAGAIN (gnet issue #341): " +
		"while the half-closed peer does not read, its loop serves no other connection",
	Scope: "under oneshot the worker threads share one epoll set, so while one spins the others go on serving every other connection " +
		"(with the default two threads the hook's detector saw no freeze in 5 of 5 runs; with one thread, a freeze in 3 of 3). " +
		"Under prio-thread the data loop, which every data connection shares, freezes (its control loop does not)",
}, {
	Name: "block-on-full-write", Hook: "BlockOnFullWrite", flag: func(f *Faults) *bool { return &f.BlockOnFullWrite },
	Designs: turnDesigns, Cases: []string{"W5"},
	Doc: "an out-queue the socket will not take at once is written by waiting in poll(2) on the loop's thread: " +
		"while a peer that keeps sending does not read, its loop serves no other connection",
	Scope: "under oneshot the worker threads share one epoll set, so while one waits the others go on serving every other connection. " +
		"Under prio-thread the data loop, which every data connection shares, freezes (its control loop does not)",
}, {
	Name: "admission-ignored", Hook: "AdmissionIgnored", flag: func(f *Faults) *bool { return &f.AdmissionIgnored },
	Designs: []DesignName{LT, ET}, Cases: []string{"A1"},
	Doc: "the admission limit engages past saturation but never refuses a frame: at 2× overload every DATA frame is served " +
		"and a flat loop's control connection waits a whole round of them",
	Scope: "prio serves its control bucket first every round and prio-thread serves control on its own loop, so their control latency " +
		"is bounded without admission; under oneshot any idle worker thread serves the control connection. There the case holds either way.",
}, {
	Name: "handoff-drop-when-full", Hook: "HandoffDropWhenFull", flag: func(f *Faults) *bool { return &f.HandoffDropWhenFull },
	Designs: []DesignName{MainSub}, Cases: []string{"M1"},
	Doc:   "the acceptor closes an accepted connection when the chosen sub-loop's ingress is full, instead of trying the others and keeping it",
	Scope: "only mainsub hands connections over",
}, {
	Name: "serve-on-two-loops", Hook: "ServeOnTwoLoops", flag: func(f *Faults) *bool { return &f.ServeOnTwoLoops },
	Designs: multiLoop, Cases: []string{"M2"},
	Doc:   "every new data connection is registered on a second data loop too (a duplicate descriptor): two loops read and write one socket",
	Scope: "needs two data loops",
}, {
	Name: "fd-identity-across-loops", Hook: "FdIdentityAcrossLoops", flag: func(f *Faults) *bool { return &f.FdIdentityAcrossLoops },
	Designs: []DesignName{MainSub, ReusePort}, Cases: []string{"M3"},
	Doc: "an offloaded result goes to whichever loop registered its fd number last and to whoever holds that number there, ignoring generations",
	Scope: "needs the fd reused on another loop: mainsub deals new connections round-robin and reuseport's flow hash spreads them; " +
		"shared's exclusive wakeups mostly go to the loop that accepted last, so the case's precondition is rarely met there",
}, {
	Name: "no-accept-coordination", Hook: "NoAcceptCoordination", flag: func(f *Faults) *bool { return &f.NoAcceptCoordination },
	Designs: []DesignName{MainSub, SharedListener}, Cases: []string{"M4"},
	Doc:   "every loop waits on the data listener with nothing to pick one (no EPOLLEXCLUSIVE; mainsub's sub-loops watch the acceptor's listener, tidwall/evio #73)",
	Scope: "reuseport's loops each have a listener of their own: there is nothing to coordinate",
}, {
	Name: "stop-wakes-one-loop", Hook: "StopWakesOneLoop", flag: func(f *Faults) *bool { return &f.StopWakesOneLoop },
	Designs: []DesignName{PrioThread, MainSub, ReusePort, SharedListener}, Cases: []string{"M5"},
	Doc:   "a STOP frame wakes only the loop that read it: an idle loop never sees the stop and STOP_ACK never comes",
	Scope: "needs a second loop with an epoll set of its own (oneshot's workers share one and a level-triggered stop eventfd)",
}, {
	Name: "uring-enobufs-eof", Hook: "RingEnobufsEOF", flag: func(f *Faults) *bool { return &f.RingEnobufsEOF },
	Designs: completionDesigns, Cases: []string{"P1"},
	Doc:   "a multishot receive that ends with ENOBUFS (no provided buffer left) is taken for end of stream: a burst larger than the buffer ring shuts connections down mid-stream",
	Scope: completionScope,
}, {
	Name: "uring-overflow-ignored", Hook: "RingOverflowIgnored", flag: func(f *Faults) *bool { return &f.RingOverflowIgnored },
	Designs: completionDesigns, Cases: []string{"P2"},
	Doc:   "a 16-entry completion queue whose overflow is never handled: completions the kernel kept past the queue are lost, and their frames go unanswered",
	Scope: completionScope,
}, {
	Name: "uring-close-no-cancel", Hook: "RingCloseNoCancel", flag: func(f *Faults) *bool { return &f.RingCloseNoCancel },
	Designs: completionDesigns, Cases: []string{"P3"},
	Doc:   "a connection is closed with its receive still armed and never cancelled, and completions are routed by descriptor number: a reused descriptor receives the old connection's bytes",
	Scope: completionScope,
}}

// LookupMutant returns the registry entry named name (a name, not a
// spec), and whether there is one.
func LookupMutant(name string) (Mutant, bool) {
	i := slices.IndexFunc(Mutants, func(m Mutant) bool { return m.Name == name })
	if i < 0 {
		return Mutant{}, false
	}
	return Mutants[i], true
}

// FaultNames lists the reactor faults ParseFault accepts, each with its
// parameter's form (Mutant.Usage), in the registry's order.
var FaultNames = mutantUsages()

func mutantUsages() []string {
	names := make([]string, len(Mutants))
	for i, m := range Mutants {
		names[i] = m.Usage()
	}
	return names
}

// ParseFault switches on the reactor fault named by spec ("name" or
// "name:k=v") in f. The error lists the accepted names.
func ParseFault(spec string, f *Faults) error {
	name, params, _ := strings.Cut(spec, ":")
	m, ok := LookupMutant(name)
	if params != "" && (!ok || m.Param == "") {
		return fmt.Errorf("%w: fault %q takes no parameters", ErrConfig, name)
	}
	if !ok {
		return fmt.Errorf("%w: unknown fault %q (accepted: %s)", ErrConfig, spec, strings.Join(FaultNames, ", "))
	}
	return m.parse(params, f)
}
