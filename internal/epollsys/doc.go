// Package epollsys has one job: the Linux system calls an event loop makes
// around epoll from a goroutine locked to its OS thread, written once for
// the reference reactors (package reactors) and the load generator (package
// loadgen), which make the same calls on their hot paths.
//
// Invariants:
//
//   - Read, Write, PollNow and WriteEventfd never block, and go through
//     unix.RawSyscall on purpose: they skip the runtime's
//     entersyscall/exitsyscall bookkeeping (and the hand-off of the thread's
//     P it can trigger), which is pure overhead on a call that returns at
//     once. They are for non-blocking descriptors only: a raw call that
//     blocks holds its P, and a stop-the-world (GC) waits for it.
//   - WaitBlocking is the one call that may block: it goes through the
//     runtime's syscall path (unix.Syscall6), so that the runtime runs other
//     goroutines and stops the world meanwhile.
//   - EINTR is retried inside every call; no caller sees it.
//   - Errors are the kernel's errno, unwrapped (a unix.Errno, 0 for none,
//     or as an error where the call returns one): each caller adds the
//     context in its own words (os.NewSyscallError and a prefix).
//   - Ctl tags a registration with a slots.Ref in the epoll event's data word
//     (slots.PutRef), so that every event names the source incarnation it was
//     registered for, never an fd number the kernel may have reused.
//   - Nothing here allocates, and nothing panics on an empty buffer or event
//     slice.
//
// What only one of the two callers needs (accept4, listening, dialling,
// timerfds) stays with that caller.
package epollsys
