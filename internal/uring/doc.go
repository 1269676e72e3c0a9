// Package uring is the io_uring layer of the proactor designs, written on
// golang.org/x/sys/unix alone (no cgo, no third-party library): ring setup with
// a probe of what the kernel accepts, the three shared mappings, submission and
// completion with the memory ordering the kernel expects, SQE preparation for
// the operations an echo proactor uses, provided buffer rings, completion-queue
// overflow flushed and counted, a wakeup other threads can use, and a feature
// probe that a run's manifest records.
//
// # What the Go runtime requires, and where it is met
//
// One ring per locked OS thread. The kernel ties a ring created with
// IORING_SETUP_SINGLE_ISSUER to the task (the OS thread) that created it, and
// with IORING_SETUP_DEFER_TASKRUN it runs completion work only when that task
// enters the kernel. A goroutine migrates between threads unless it calls
// runtime.LockOSThread, so the goroutine that calls New must lock its thread
// first and be the only one to call the Ring's methods (all but Waker.Wake).
// A call from another thread fails with EEXIST, which the layer reports as an
// *Error naming that rule. A Ring is not safe for concurrent use.
//
// No memory the kernel holds is memory the Go runtime may move or free. Goroutine
// stacks move when they grow, and the garbage collector frees what nothing
// references, while the kernel holds only a raw address. So the rings and the
// provided buffers (NewBufRing) are anonymous mmap'd memory the runtime never
// manages; the few Go values an operation hands the kernel (a send's bytes, a
// timeout's timespec, the wakeup's 8-byte counter) are pinned with a
// runtime.Pinner kept by the Ring until the operation's last completion is
// reaped; and the wait's timespec lives in the Ring itself, on the heap.
// Multishot accept passes no sockaddr at all: one address buffer would be
// rewritten by every completion, so a design asks getpeername(2) instead.
//
// Close cancels every operation in flight and waits for the cancellation (within
// a bound), then closes the ring descriptor, unmaps the rings and the buffer
// rings, and releases the pins, in that order, so no mapping is released while
// the kernel may still write into it.
//
// # Memory ordering
//
// The ring indices are shared with the kernel and are read and written with
// sync/atomic, as liburing does with io_uring_smp_load_acquire and
// io_uring_smp_store_release. Go's atomics are sequentially consistent, which
// is at least as strong as the acquire and release each site needs:
//   - SQ tail: store-release, so the kernel that reads the new tail sees the SQE
//     contents written before it;
//   - SQ head: load-acquire, so a slot the kernel has consumed is not rewritten
//     before the kernel is done reading it;
//   - CQ tail: load-acquire, so the CQE contents the kernel wrote before moving
//     the tail are visible when they are read;
//   - CQ head: store-release, so the kernel reuses a CQE slot only after it has
//     been read;
//   - SQ flags and the CQ overflow counter: atomic loads (liburing's READ_ONCE),
//     since the kernel sets them at any time;
//   - a buffer ring's tail: store-release, so the kernel sees a buffer's entry
//     before it may select it.
//
// # Errors
//
// Every failing system call is reported as an *Error carrying the call, the
// argument that matters, the errno (errors.Is works on it) and, for ring
// creation, a hint naming what to change: ENOSYS (a kernel without io_uring, or
// a seccomp filter), EPERM (the kernel.io_uring_disabled sysctl), ENOMEM (ring
// memory charged to RLIMIT_MEMLOCK on kernels before 5.12). A completion's
// negative result is a value (CQE.Err), never end of stream: ENOBUFS from a
// recv means the buffer ring is empty, the socket's bytes wait in the kernel,
// and the recv is to be armed again once buffers are recycled.
package uring
