// Package uringmainsub is the multi-loop proactor reference design with
// mainsub's layout: one acceptor loop and Config.Loops sub-loops, each on
// its own locked OS thread with an io_uring and a provided buffer ring of
// its own. The acceptor's ring has the multishot accept on the data
// listener; each connection it accepts is handed through one sub-loop's
// ingress (round-robin, least-conns or least-loaded: Config.Assign), and
// that sub-loop, on its own thread, registers it and arms its multishot
// recv on its own ring: every operation of a connection is submitted to
// the ring of the loop that owns it, never to the acceptor's. A full
// sub-loop ingress never loses a connection: the acceptor tries the
// others, then keeps it and retries every round. The acceptor also serves
// the control connections.
//
// Each loop is uring's (package reactors/uring): multishot recv into its
// buffer ring, sends from the out-queue, every completion routed by (slot,
// generation); its ingress eventfd and timerfd stay in its epoll set,
// which its ring polls, so a handed connection reaches the sub-loop as
// the epoll designs' do (Layout.Completion; reactors/ring_linux.go). Each
// loop serves its connections with lt's flat policy, one turn per
// completion batch.
//
// It promises what uring promises, per loop, and what mainsub promises of
// the handoff. It lines up against mainsub (the same acceptor and
// assignment, the same policy, on epoll) and needs what uring needs: Linux
// 6.0 and io_uring allowed (New refuses with the errno and a hint
// otherwise); it takes no urgent data (--urgent oob) nor exclusive = off
// (the acceptor alone waits on the listener). Its mutants are uring's
// (uring-enobufs-eof, uring-overflow-ignored, uring-close-no-cancel).
package uringmainsub
