// Package uringreuseport is the multi-loop proactor reference design with
// reuseport's layout: Config.Loops loops, each on its own locked OS thread
// with an io_uring, a provided buffer ring and a data listener of its own,
// all bound to one address with SO_REUSEPORT, so the kernel's flow hash
// picks the loop of each connection and no ring waits on another's
// listener. Loop 0 also serves the control connections.
//
// Each loop is uring's (package reactors/uring): a multishot accept on its
// listener, a multishot recv per connection into its own buffer ring,
// sends from the out-queue, every completion routed by (slot, generation);
// its ingress eventfd and timerfd stay in its epoll set, which its ring
// polls (Layout.Completion; reactors/ring_linux.go). A connection lives
// on the loop that accepted it, so no operation of it is ever submitted to
// another loop's ring. Each loop serves its connections with lt's flat
// policy, one turn per completion batch.
//
// It promises what uring promises, per loop: running out of a loop's
// provided buffers is backpressure, not failure; no completion is lost;
// an operation's result never reaches another connection. A loop's buffer
// ring is Config.Ring.Buffers buffers of Config.Ring.BufferSize bytes, so
// the whole reactor holds Loops times that for the kernel to fill.
//
// It lines up against reuseport (the same listeners, the same policy, on
// epoll) and needs what uring needs: Linux 6.0 and io_uring allowed (New
// refuses with the errno and a hint otherwise); it takes no urgent data
// (--urgent oob), nor an assignment (the kernel's flow hash assigns), nor
// exclusive = off (no listener is shared). Its mutants are uring's
// (uring-enobufs-eof, uring-overflow-ignored, uring-close-no-cancel).
package uringreuseport
