// Package priothread is the reference reactor with a separate control
// reactor: the control address is served by its own loop on its own locked
// OS thread with its own epoll fd, the data address by another.
//
// Control latency then depends on the control loop's rounds only, not on the
// data backlog; the cost is a second thread and a cross-thread hand-off for
// STOP (the data loop quiesces through its ingress). The process must run
// with GOMAXPROCS of at least loops + 1, or the Go scheduler, not the design,
// decides the control latency.
package priothread
