// Package lt is the level-triggered reference reactor, the flat design.
//
// Sockets are registered level-triggered and served in the order the kernel
// reports them, a turn per ready source bounded by the input, byte and time
// budgets. Unread socket data needs no bookkeeping: the kernel reports it
// again at the next epoll_wait. Only complete frames already buffered by the
// reactor go on the application ready queue. EPOLLOUT is registered only
// while a connection's out-queue is non-empty. Control and data share one
// FIFO, so control latency grows with the data batch in front of it: this is
// the baseline the priority designs are measured against.
package lt
