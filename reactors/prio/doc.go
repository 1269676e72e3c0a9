// Package prio is the single-loop priority reference design: one loop, two
// buckets.
//
// Each epoll batch is classified: control sources (control connections and
// the reactor's own listeners, ingress and timers) are served first and
// unconditionally; data sources go to the data bucket, served from the ready
// queue under a time budget (Config.PrioDataBudget, 500 µs by default). The
// clock is read after every source turn and, within a turn, every
// Budgets.ClockEvery (16) frames, where the turn reads it for its own time
// budget: the bucket ends within ClockEvery frames of its budget, however
// many frames a turn holds. (Reading it every 16 sources instead, as a
// first sketch of this design did, let a heavy callback carry the bucket through a whole
// round: 16 turns × 32 frames × 50 µs.) Data left over waits for the next
// round, which starts with a zero-timeout wait. Control latency is then
// bounded by one data budget plus ClockEvery frames, instead of by the
// whole batch.
//
// Its hooks (loop_linux.go): one loop; connections level-triggered; a
// control connection's event is served at once, a data connection's is
// queued (OnEvent); a turn cut by a budget is requeued only with complete
// frames buffered (Requeue); a round serves every control source queued
// (its own ready queue, the control bucket), then the data queue under the
// time budget (Consume, through Loop.SetDeadline / PastDeadline). Its state
// is the control bucket's queue.
//
// It promises what every reference reactor promises (package reactors),
// and that a control frame waits for at most one data bucket plus
// ClockEvery frames' callbacks once its event is seen. It does not promise
// anything while a single callback runs (it cannot be pre-empted), nor
// fairness between data sources beyond the queue's order.
package prio
