//go:build linux

package reactors

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors/readyq"
	"github.com/reactorlab/reactorlab/reactors/slots"
)

// Policy is a reference design: what it decides and the shared loop does
// not. The loop (this package) owns the mechanism every design shares —
// sources and their states, reading and parsing frames under the budgets,
// out-queues and interest, accept and EMFILE, ingress, timers, STOP and its
// ledger —; a Policy says how many loops there are and on which epoll fds
// (Layout), and, per loop (NewLoop), how connections are registered, what
// an event does, what happens when a turn's budget runs out, and which
// sources a round consumes in what order.
//
// A design's package implements Policy on a type of its own; the registry
// (package reactors/designs) maps each DesignName to one.
type Policy interface {
	Design
	// Layout is how many loops the reactor runs and how they share epoll
	// fds. cfg has passed Config.Validate and Check.
	Layout(cfg *Config) Layout
	// NewLoop returns the design's part of loop l (its state and hooks),
	// once per loop, before the loop runs. Every hook then runs on l's
	// thread only.
	NewLoop(l *Loop) LoopPolicy
}

// Layout says how a design's loops sit on threads and epoll fds.
//
// Invariants (checked by New): 1 ≤ Loops ≤ 256; 0 ≤ ControlLoop < Loops;
// a Shared layout registers connections one-shot (its LoopPolicy's
// ConnFlags hold EPOLLONESHOT and it implements Rearmer), since otherwise
// two loops could serve one connection at once, and takes no offload pool
// (Config.Workers = 0: it has no ingress for the results).
type Layout struct {
	// Loops is the number of loop threads.
	Loops int
	// Shared: every loop waits on one epoll fd and shares one slot table,
	// one timer set and the listeners (ONESHOT's workers). An event hands
	// its source to the one loop whose epoll_wait returned it, until that
	// loop rearms it; listeners and the timerfd are one-shot too, so one
	// event wakes one loop. There is no ingress: a level-triggered stop
	// eventfd wakes every loop for STOP, and whichever loop quiesces last
	// sends STOP_ACK. Not Shared: each loop has its own epoll fd, slot
	// table, timer set and ingress.
	Shared bool
	// ControlLoop is the loop that gets the control listener (and so the
	// control connections); the data listener goes to loop 0 unless
	// Listener spreads it.
	ControlLoop int
	// Listener is how the data listener is spread over the loops
	// (ListenerOnFirst, the zero value: loop 0 has the only one). A Shared
	// layout takes only ListenerOnFirst.
	Listener ListenerLayout
	// Exclusive registers a ListenerInEverySet listener EPOLLEXCLUSIVE in
	// every loop's set, so one connection wakes one loop (or a few), not
	// every loop waiting on it.
	Exclusive bool
	// Completion serves the connections and listeners through an io_uring
	// per loop (the proactor; ring_linux.go) instead of the epoll set:
	// multishot accept, multishot recv into a provided buffer ring, sends
	// of the out-queue, each operation's completion routed by the (slot,
	// generation) in its user_data. The loop blocks in io_uring_enter; its
	// own descriptors (ingress, timerfd) stay in its epoll set, which the
	// ring polls, so budgets, ingress, timers, STOP and the ledger keep
	// their one implementation. A Completion layout is not Shared, keeps
	// each listener on one loop's ring (ListenerOnFirst, ListenerPerLoop,
	// or ListenerHandoff, whose sub-loop arms a handed connection's
	// receive on its own ring when it adopts it), and its connections
	// level-triggered (ConnFlags 0: the flag is not used).
	Completion bool
}

// ListenerLayout is how a layout spreads the data listener over its loops.
type ListenerLayout uint8

const (
	// ListenerOnFirst: one data listener, on loop 0.
	ListenerOnFirst ListenerLayout = iota
	// ListenerHandoff: one data listener, on loop 0, the acceptor, which
	// serves no data connection: it hands each one it accepts to one of
	// loops 1..Loops-1 (its sub-loops, chosen by Config.Assign) through
	// that loop's ingress; the sub-loop registers it and owns it from then
	// on. A sub-loop's full ingress never loses a connection: the acceptor
	// tries the others, then keeps it and retries every round.
	ListenerHandoff
	// ListenerPerLoop: every loop has a data listener of its own, all
	// bound to one address with SO_REUSEPORT: the kernel's flow hash picks
	// the loop of each connection.
	ListenerPerLoop
	// ListenerInEverySet: one data listener, registered in every loop's
	// epoll set (EPOLLEXCLUSIVE with Layout.Exclusive): whichever loop
	// accepts a connection owns it.
	ListenerInEverySet
)

// String names the listener layout as the loop roles and docs do.
func (ll ListenerLayout) String() string {
	switch ll {
	case ListenerHandoff:
		return "handoff"
	case ListenerPerLoop:
		return "per-loop"
	case ListenerInEverySet:
		return "in-every-set"
	}
	return "on-first"
}

// LoopPolicy is a design's part of one loop: its state and the hooks where
// designs differ. The loop calls them on its own thread only.
type LoopPolicy interface {
	// ConnFlags are the trigger flags every connection is registered with:
	// 0 (level-triggered), EPOLLET or EPOLLONESHOT. Read once, when the
	// loop is built.
	ConnFlags() uint32
	// OnEvent acts on an epoll event of connection s once the loop has
	// done what every design does with it (errors, EPOLLOUT, EPOLLRDHUP):
	// readable says the event reported input. s is open. The hook decides
	// whether s is served now (Loop.Turn), queued (Loop.Enqueue) or, with
	// one-shot registration, rearmed.
	OnEvent(s *Source, readable bool)
	// Requeue decides, at the end of a turn that left s reading, whether s
	// goes back on its ready queue: more says a budget ended the turn with
	// input possibly left in the socket; buffered, that complete frames
	// remain in s's input buffer. A level-triggered design needs only
	// buffered (the kernel re-reports unread socket data); an
	// edge-triggered one needs more as well (no new edge will come).
	Requeue(more, buffered bool) bool
	// Consume serves, once per round, the sources that have work left:
	// which queues, in what order, under which budget.
	Consume()
	// QueueFor is the ready queue s waits on when it has work left and is
	// not served at once (after a backpressure pause or a full worker
	// pool).
	QueueFor(s *Source) *readyq.Queue
}

// Rearmer is the hook of a design that registers connections one-shot
// (EPOLLONESHOT): after each event the kernel reports nothing more for the
// source until Rearm re-registers it. The loop calls Rearm where it has
// finished with a source outside the design's own hooks (STOP_ACK queued
// on the connection that carried the STOP).
type Rearmer interface {
	Rearm(s *Source)
}

// Ref is s's identity, (slot, generation): its fd number is reused at
// once after close, its Ref never. Source's exported methods are for a
// design's hooks, on the thread of the loop that holds the source.
func (s *Source) Ref() slots.Ref { return s.ref }

// Control reports whether s is a control connection (accepted on the
// control listener).
func (s *Source) Control() bool { return s.control }

// Held reports whether s carried the STOP and is held, unarmed, until
// STOP_ACK is queued on it (shared layouts only).
func (s *Source) Held() bool { return s.state == stateHeld }

// Config is the reactor's configuration (read-only). Loop's exported
// methods are what the shared loop offers a design's hooks; only those
// hooks, on the loop's own thread, may call them.
func (l *Loop) Config() *Config { return l.cfg }

// Counters are the loop's own counters; a hook counts what it decides
// (Rearms, MissedRearms, TimeBudgetHits).
func (l *Loop) Counters() *Counters { return &l.stats }

// Ready is the loop's ready queue: every design queues data sources there,
// and the loop's wait does not block while it is non-empty.
func (l *Loop) Ready() *readyq.Queue { return l.ready }

// NewReadyQueue adds a ready queue of the design's own (prio's control
// bucket): the loop's wait does not block while it is non-empty either,
// and a closed source is removed from it. Call it from Policy.NewLoop.
func (l *Loop) NewReadyQueue() *readyq.Queue {
	q := readyq.New(l.cfg.MaxConns)
	l.queues = append(l.queues, q)
	return q
}

// Turn is one turn of connection s: frames already buffered and newly
// read, under the budgets, then one flush of its out-queue. At its end the
// design's Requeue decides whether s goes back on q. It reports whether s
// was requeued; false also when s is closed, held, or not a connection.
func (l *Loop) Turn(s *Source, q *readyq.Queue) bool { return l.turn(s, q) }

// Enqueue puts s on q (once: a source already queued stays where it is).
// at is when s became ready, if the caller knows it (WokeAt, for a source
// reported by this round's epoll_wait), else 0 (the loop reads the clock
// when it records rotation).
func (l *Loop) Enqueue(q *readyq.Queue, s *Source, at int64) { l.enqueue(q, s, at) }

// WokeAt is when the round's epoll_wait returned (CLOCK_MONOTONIC ns): a
// source it reported became ready no later than that.
func (l *Loop) WokeAt() int64 { return l.wokeAt }

// Pop takes the head of q, skipping sources no longer registered; false
// when q is empty.
func (l *Loop) Pop(q *readyq.Queue) (*Source, bool) {
	for {
		ref, ok := q.Pop()
		if !ok {
			return nil, false
		}
		if s, ok := l.table.Get(ref); ok {
			return s, true
		}
	}
}

// NextReady is Pop that also records, with statistics on, how long the
// source waited on q (the rotation histogram).
func (l *Loop) NextReady(q *readyq.Queue) (*Source, bool) {
	s, ok := l.Pop(q)
	if ok && !l.hist.off {
		l.hist.record(l.hist.rotation, nanotime()-s.since)
	}
	return s, ok
}

// ServeReady gives up to budget sources from q's head one turn each, in
// order; a source whose turn leaves work goes back to the tail (Requeue).
func (l *Loop) ServeReady(q *readyq.Queue, budget int) {
	for served := 0; served < budget; served++ {
		s, ok := l.NextReady(q)
		if !ok {
			return
		}
		l.turn(s, q)
	}
}

// Live reports whether s is still the source registered under its Ref
// (a turn may have closed it).
func (l *Loop) Live(s *Source) bool {
	live, ok := l.table.Get(s.ref)
	return ok && live == s
}

// SetDeadline bounds the rest of this consume pass to d from now: turns
// then end, at a clock read (every Budgets.ClockEvery frames, and after
// each turn where the design calls PastDeadline), once it has passed.
// ClearDeadline ends the bound.
func (l *Loop) SetDeadline(d time.Duration) { l.deadline = nanotime() + int64(d) }

// ClearDeadline removes the bound SetDeadline set.
func (l *Loop) ClearDeadline() { l.deadline = 0 }

// PastDeadline reads the clock and reports whether the bound SetDeadline
// set has passed, counting a time-budget hit when it has.
func (l *Loop) PastDeadline() bool {
	if l.deadline != 0 && nanotime() > l.deadline {
		l.stats.TimeBudgetHits++
		return true
	}
	return false
}

// LimitReads makes every turn end after n reads of the socket (0: no
// limit, the default). A correct design never sets it: it is how the
// NoDrain mutant reads once per edge.
func (l *Loop) LimitReads(n int) { l.maxReads = n }

// RearmOneShot re-registers s, one-shot, with the interest it wants now,
// and gives up this loop's ownership of it: from then on s is not this
// loop's to read. If the kernel refuses, s is closed.
func (l *Loop) RearmOneShot(s *Source) {
	l.stats.Rearms++
	want := l.wantEvents(s)
	s.interest = want
	fd, ref := s.fd, s.ref // s is not ours to read once released
	s.owned.Store(0)       // release: the next owner sees everything written above
	if err := epollCtl(l.epfd, unix.EPOLL_CTL_MOD, fd, want, ref); err != nil {
		s.owned.Store(1) // not armed, so still ours
		l.closeSource(s)
	}
}
