// Package ingress is the one way other threads hand work to a reactor's owner
// loop: a bounded, lock-free multi-producer single-consumer queue plus an
// eventfd that the owner registers in its epoll set.
//
// Producers (worker pools, the control reactor, Stop) call [Queue.Push] from any
// goroutine; it never waits for space and reports a full queue as false, so
// backpressure stays with the caller. The owner loop, on its locked OS thread,
// calls [Queue.Acknowledge] when the eventfd is reported readable and then
// [Queue.Drain] under its ingress budget. Wakeups are coalesced: a producer
// writes the eventfd only when it flips the queue's notified flag from clear to
// set, so a burst of pushes costs one write and one epoll event, and no wakeup
// is ever lost. The protocol that guarantees this, and the ways to break it, are
// documented next to the code in ingress_linux.go.
//
// The package talks to the kernel with raw, non-blocking syscalls and does not
// use Go's netpoller: the owner loop calls epoll_wait itself.
package ingress
