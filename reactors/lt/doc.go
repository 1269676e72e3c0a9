// Package lt is the level-triggered reference design, the flat one.
//
// Sockets are registered level-triggered and served in the order the kernel
// reports them, a turn per ready source bounded by the input, byte and time
// budgets. Unread socket data needs no bookkeeping: the kernel reports it
// again at the next epoll_wait. Only complete frames already buffered by the
// reactor go on the application ready queue. EPOLLOUT is registered only
// while a connection's out-queue is non-empty. Control and data share one
// FIFO, so control latency grows with the data batch in front of it: this is
// the baseline the priority designs are measured against.
//
// Its hooks (loop_linux.go): one loop (Layout); connections registered
// level-triggered (ConnFlags 0); an event is served at once, in batch order
// (OnEvent → Turn); a turn cut by a budget is requeued only with complete
// frames buffered (Requeue: the kernel re-reports the socket); a round
// serves up to Budgets.Consume queued sources from the head (Consume).
//
// It promises what every reference reactor promises (package reactors),
// with every source one turn per batch. It does not promise any bound on
// control latency beyond the whole round in front of it.
package lt
