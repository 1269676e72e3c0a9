// Package reactors is the Reactor contract and the parts every reference
// reactor shares: the owner loop, sources identified by (slot, generation),
// out-queues with watermarks, budgets, cross-thread ingress, timers, the
// callback cost and its worker pool, STOP with a ledger, statistics, and the
// fault hooks that turn a reference reactor into a known-buggy mutant.
//
// # What every reference reactor promises
//
// A reference reactor serves the wire protocol (package wire) on a data
// address and, optionally, a control address. It echoes DATA frames (after
// the configured callback cost) and PING frames unchanged, on the connection
// they came from, in the order they came. It identifies a source by its
// slots.Ref, never by fd number alone: the generation travels in
// epoll_event.data, and events, queued turns and worker results carrying an
// old generation are dropped and counted (StaleEvents, StaleResults).
//
// Each loop runs on its own locked OS thread and repeats, every round:
//
//	check STOP → drain ingress (Budgets.Ingress) → run due timers →
//	consume ready sources (as the design orders them: lt, et, oneshot
//	serve Budgets.Consume sources; prio its control bucket, then data
//	under PrioDataBudget; per source turn Budgets.Input frames,
//	Budgets.Bytes bytes, Budgets.Time) →
//	publish stats → epoll_wait → dispatch the batch
//
// and waits with timeout 0 while ready work remains, else until an event
// (the timerfd bounds the wait: every tick, or the nearest deadline).
// Since a running callback cannot be pre-empted, a round is bounded by
// C_fixed + Σ B_i × C_i, and control waits at most for the CPU plus the rest
// of the current round.
//
// Per connection the out-queue has a high and a low watermark: above high
// the reactor stops reading that connection (so backpressure reaches the
// peer through TCP) until the queue drains to low; above the hard cap it
// closes the connection. EPOLLOUT is registered only while the queue is
// non-empty. A frame whose header declares more than Config.MaxFrame is
// answered with REJECT and its connection closed, before any buffer of the
// declared size exists; other connections go on.
//
// STOP (a STOP frame on a control connection, or Reactor.Stop) closes
// admission: listeners close (in a shared layout, oneshot's, accepted
// connections are closed at once instead), DATA read afterwards is
// answered with REJECT, every offloaded callback is waited for (for at
// most Config.StopGrace: one not back by then is counted rejected and
// abandoned, QuiesceTimeouts). Then each loop quiesces (reads no more; its
// ledger is final) and STOP_ACK carries the ledger, in which
// accepted = completed + rejected. Out-queues drain for at most
// Config.StopGrace and the reactor exits.
//
// What a reactor does not promise: exact event counts (the kernel promises
// readiness, not a number of events), fairness beyond its budgets, order
// between a connection's PINGs and its offloaded DATA echoes, or delivery of
// echoes queued for a peer that does not read before the grace period ends.
//
// # Designs and the shared loop
//
// This package is the mechanism every design shares; a design is a type of
// its own, in its own package, implementing Policy: how many loops and on
// which epoll fds (Layout), and per loop (LoopPolicy) how connections are
// registered, what an event does, what happens when a turn's budget runs
// out, and which sources a round consumes in what order. The shared loop
// holds no design's name; it keeps two mechanism switches that follow from
// epoll itself: a shared layout (several loops on one epoll fd, where every
// event must go to one loop only) and one-shot registration (where interest
// changes wait for the design's rearm); and one path that replaces epoll
// for the connections, the completion path (Layout.Completion, a ring per
// loop: ring_linux.go), on which the same turns, budgets, out-queues,
// ingress, timers and STOP run. The designs, each with its contract and its
// hooks in its package documentation:
//
//	lt           level-triggered, flat: events served in the kernel's batch order
//	et           edge-triggered with an application ready queue
//	oneshot      EPOLLONESHOT, Config.Threads workers on one shared epoll fd
//	prio         one loop, two buckets: control first, data under a time budget
//	prio-thread  a separate control loop on its own thread and epoll fd
//	mainsub      an acceptor loop handing each connection to one of Config.Loops sub-loops
//	reuseport    Config.Loops loops, each with its own SO_REUSEPORT listener
//	shared       Config.Loops loops sharing one listener (EPOLLEXCLUSIVE by default)
//	uring        one loop on an io_uring: the proactor (the completion path)
//
// Package reactors/designs maps each name to its design; adding a design is
// one package and one line there.
//
// # Source states
//
// A connection is reading, paused (out-queue above its high watermark),
// waiting for room in the worker pool, held (shared layout: it carried the
// STOP), closing (EOF read) or closed; the transitions are listed, and
// checked, in one place (sourceState in source_linux.go). Ready-queued is
// membership of a ready queue, not a state.
//
// # Faults
//
// Config.Faults switches one hook each (see Faults). With all of them off
// the hooks are a predictable branch on a loop-local field.
package reactors
