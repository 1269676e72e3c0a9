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
//	consume ready sources (Budgets.Consume sources; per source turn
//	Budgets.Input frames, Budgets.Bytes bytes, Budgets.Time) →
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
// admission: listeners close (ONESHOT: accepted connections are closed at
// once), DATA read afterwards is answered with REJECT, every offloaded
// callback is waited for. Then each loop quiesces (reads no more; its
// ledger is final) and STOP_ACK carries the ledger, in which
// accepted = completed + rejected. Out-queues drain for at most
// Config.StopGrace and the reactor exits.
//
// What a reactor does not promise: exact event counts (the kernel promises
// readiness, not a number of events), fairness beyond its budgets, order
// between a connection's PINGs and its offloaded DATA echoes, or delivery of
// echoes queued for a peer that does not read before the grace period ends.
//
// # The designs
//
// lt: level-triggered, dispatched in the kernel's batch order (the flat
// design). A source turn is bounded by the budgets; unread socket data is
// reported again by the kernel, so only frames already buffered go on the
// ready queue.
//
// et: edge-triggered with an application ready queue. An event only puts the
// source on the queue (dedup on enqueue); each round serves Consume sources
// from the head, round-robin; a source whose budget ran out before EAGAIN
// goes back to the tail, since no new edge will come for data already
// there; the loop waits with timeout 0 while the queue is non-empty.
//
// oneshot: EPOLLONESHOT with Config.Threads worker threads on one epoll fd.
// An event gives one worker exclusive ownership of the source until that
// worker rearms it (EPOLL_CTL_MOD) after the turn; forgetting to rearm
// silences the connection forever. ONESHOT gives no rotation, reference
// management or fairness by itself. Callbacks run inline on the workers.
//
// prio: one loop, two buckets. Control sources (control connections,
// listeners, ingress, timers) run first, unconditionally; data sources then
// run from the ready queue under Config.PrioDataBudget (500 µs), the clock
// read after every source turn and every Budgets.ClockEvery (16) frames
// within one.
//
// prio-thread: a separate control reactor on its own thread and epoll fd, so
// control latency no longer depends on the data loop's rounds at all.
//
// # Source states
//
// A connection is reading (EPOLLIN registered), ready-queued (work left
// after a turn), paused (out-queue above the high watermark, or a frame
// waiting for room in the worker pool: EPOLLIN removed), closing (EOF read;
// closes when its out-queue and offloaded work are done), or held (ONESHOT:
// it carried the STOP and stays unarmed until STOP_ACK is queued).
//
// # Faults
//
// Config.Faults switches one hook each (see Faults). With all of them off
// the hooks are a predictable branch on a loop-local field.
package reactors
