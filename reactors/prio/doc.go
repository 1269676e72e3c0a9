// Package prio is the single-loop priority reference reactor: one loop, two
// buckets.
//
// Each epoll batch is classified: control sources (control connections and
// the reactor's own listeners, ingress and timers) are served first and
// unconditionally; data sources go to the data bucket, served from the ready
// queue under a time budget (Config.PrioDataBudget, 500 µs by default) with
// the clock read every Budgets.ClockEvery (16) sources, as in the design
// notes. Data left over waits for the next round, which starts with a
// zero-timeout wait. Control latency is then bounded by one data budget plus
// one source turn, instead of by the whole batch.
package prio
