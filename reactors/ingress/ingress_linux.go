//go:build linux

package ingress

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"
)

// MaxCapacity is the largest capacity [New] accepts. An ingress queue is a
// bounded hand-off, not a store: a backlog this deep is already a failure of
// backpressure upstream.
const MaxCapacity = 1 << 24

// The wakeup protocol
//
// Two pieces of state tell producers whether the owner loop has to be woken:
// the notified flag (Queue.notified, an atomic.Bool) and the eventfd counter
// (efd), which the owner's epoll set reports as EPOLLIN while it is non-zero.
//
//	notified efd   meaning
//	false    0     IDLE: nothing promised. The owner may be asleep (or about to
//	               be); the next producer that publishes an item must wake it.
//	true     >0    ARMED: a wakeup is in the kernel. Producers publish and return
//	               without a syscall; this is the coalescing.
//	true     0     transient: a producer won the flag and its write is in flight,
//	               or the owner is inside Acknowledge between its read and its
//	               clear.
//	false    >0    transient, harmless: a write whose flag the owner cleared
//	               before the write landed. It costs one spurious wakeup.
//
// Who moves it:
//
//	Push (any producer):   publish the item (cell seq store), THEN
//	                       if notified is false and CAS(false→true) wins:
//	                       write 1 to efd.             IDLE → ARMED
//	Acknowledge (owner):   read efd to zero, THEN      ARMED → (true, 0)
//	                       store notified = false.      → IDLE
//	Drain (owner):         after Acknowledge; pops up to a budget and reports
//	                       pending when the next item is already published.
//	Owner loop:            pending → next epoll_wait has timeout 0;
//	                       not pending → it may block in epoll_wait.
//
// Why no wakeup is lost. Go's atomics are sequentially consistent, so all flag
// operations and cell-sequence operations fall in one total order. Take a push
// whose publish is followed by its flag check:
//
//   - The check finds false and this producer wins the CAS: it writes efd after
//     publishing, so epoll reports the owner readable after the item is visible;
//     the owner's Acknowledge and Drain that follow see the item.
//   - The check finds true (or loses the CAS to a producer W that sets it): the
//     true was set by W's CAS with no clear between it and our check. W writes
//     efd after its CAS; the Acknowledge that reads W's write clears the flag
//     after that read, hence after our check (a clear before our check would have
//     been seen). So: publish < our check < the owner's clear < the owner's
//     Drain, and that Drain sees the item.
//
// A Drain can stop early at a cell that a producer has claimed but not yet
// published (producers claim positions in order but may publish out of order,
// and the consumer takes positions strictly in order). It then reports
// pending=false on purpose: that producer's own publish-then-check, above,
// wakes the owner again, and the owner must not spin waiting for a producer
// that may be descheduled. Items published behind the hole are covered by the
// same wakeup. When Drain stops because the budget is spent it reports
// pending=true: the wakeup that announced the items left was consumed by this
// round's Acknowledge, so nothing in the kernel will wake the owner for them
// unless some new push happens to.
//
// The wrong ways (the project's "lost wakeup" mutant uses one of them):
//
//   - Clearing after draining (Drain, then Acknowledge): a producer publishes
//     after Drain passed its cell, sees notified still true and skips the write;
//     the owner then clears the flag and sleeps with the item stranded until
//     some unrelated push wakes it.
//   - Clearing before reading (store false, then read efd): a producer can CAS
//     and write in between; the read swallows that write while the flag stays
//     true, so no producer ever writes again: the queue goes deaf for good.
//   - Sleeping while pending (ignoring pending and blocking in epoll_wait): the
//     items beyond the budget have no eventfd count behind them; the budget has
//     turned into lost work. A periodic tick hides this bug by re-checking every
//     millisecond; it does not fix it.
//   - Notifying before publishing (CAS and write, then store the cell seq): the
//     owner can wake, clear and drain before the item is visible, then sleep.

// cell is one slot of the ring. seq says whose turn it is for the position
// p that maps to this cell: seq == p means free for the producer claiming p,
// seq == p+1 means published and ready for the consumer, seq == p+capacity
// means freed by the consumer for the next lap.
type cell[T any] struct {
	seq atomic.Uint64
	val T
}

// Queue is a bounded multi-producer single-consumer FIFO with an eventfd that
// wakes the consumer. The zero value is not usable; make one with [New].
//
// Invariants: at most Cap items are held; Push never blocks waiting for space
// and never allocates for a value T; items of one producer are drained in the
// order that producer pushed them; every item whose Push returned true is
// delivered by some Drain as long as the consumer follows the protocol
// (Acknowledge when the fd is readable, then Drain, and no blocking wait while
// Drain reported pending).
type Queue[T any] struct {
	// Read-only after New, except closed which flips once.
	cells  []cell[T]
	mask   uint64
	fd     int
	closed atomic.Bool

	_    cpu.CacheLinePad
	tail atomic.Uint64 // next position a producer claims (by CAS)

	_    cpu.CacheLinePad
	head atomic.Uint64 // next position to pop; written by the consumer only
	rbuf [8]byte       // the consumer's eventfd read buffer

	_        cpu.CacheLinePad
	notified atomic.Bool // see "The wakeup protocol" above

	_ cpu.CacheLinePad
	// fdMu keeps the fd number alive across each syscall on it: users hold it
	// for reading for one non-blocking syscall, Close holds it for writing. Without
	// it a producer could write 8 bytes into whatever file the kernel handed the
	// number to after Close (fd numbers are reused at once).
	fdMu sync.RWMutex
	err  atomic.Pointer[error] // first unexpected eventfd errno, for Err
}

// eventfdOne is the 8-byte native-endian 1 that producers write. Only the
// kernel reads it, so concurrent writers may share it, and being a package
// variable it costs no allocation per write.
var eventfdOne = func() (b [8]byte) {
	binary.NativeEndian.PutUint64(b[:], 1)
	return b
}()

// New makes a queue holding at most capacity items, rounded up to a power of
// two (minimum 2), and its eventfd, created with EFD_NONBLOCK|EFD_CLOEXEC and a
// zero counter. capacity must be in 1..[MaxCapacity]; otherwise the error wraps
// [ErrCapacity]. An eventfd failure is returned as an *os.SyscallError naming
// "eventfd", wrapped with context.
func New[T any](capacity int) (*Queue[T], error) {
	if capacity <= 0 || capacity > MaxCapacity {
		return nil, fmt.Errorf("ingress: new queue of capacity %d (want 1..%d): %w", capacity, MaxCapacity, ErrCapacity)
	}
	size := uint64(2)
	if capacity > 2 {
		size = 1 << bits.Len64(uint64(capacity-1))
	}
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("ingress: new queue of capacity %d: %w", capacity, os.NewSyscallError("eventfd", err))
	}
	q := &Queue[T]{cells: make([]cell[T], size), mask: size - 1, fd: fd}
	for i := range q.cells {
		q.cells[i].seq.Store(uint64(i))
	}
	return q, nil
}

// Fd returns the eventfd to register with EPOLLIN in the owner's epoll set.
// Level-triggered works because the counter stays non-zero, and the fd
// readable, until Acknowledge reads it; edge-triggered works because every
// eventfd write is a new event, and after each Acknowledge the next push
// writes again. After Close it returns -1 (closing the eventfd also removes it
// from epoll sets that hold it).
func (q *Queue[T]) Fd() int {
	if q.closed.Load() {
		return -1
	}
	return q.fd
}

// Cap returns the number of items the queue can hold (the rounded capacity).
func (q *Queue[T]) Cap() int { return len(q.cells) }

// Push appends v and wakes the consumer if it may be asleep. It is safe from
// any number of goroutines, never waits for space (nor for the consumer) and
// does not allocate for a value T. It returns false, leaving the queue
// unchanged, when the queue is full or closed; the caller decides whether to
// retry later, reject or count. At most one eventfd write is made per wakeup,
// however many items are pushed before the consumer acknowledges. A Push that
// races with Close may still return true; its item stays for Drain.
func (q *Queue[T]) Push(v T) bool {
	if q.closed.Load() {
		return false
	}
	pos := q.tail.Load()
	var c *cell[T]
	for {
		c = &q.cells[pos&q.mask]
		d := int64(c.seq.Load() - pos)
		if d == 0 {
			if q.tail.CompareAndSwap(pos, pos+1) {
				break // position pos is ours
			}
			pos = q.tail.Load()
		} else if d < 0 {
			// The cell still holds (or is about to hold) the item from one lap
			// ago: the consumer has not freed it, the ring is full.
			return false
		} else {
			pos = q.tail.Load() // another producer took pos; catch up
		}
	}
	c.val = v
	c.seq.Store(pos + 1) // publish first, then check the flag: the order matters
	q.notify()
	return true
}

// notify is the producer half of the protocol: only the producer that flips
// notified from false to true writes the eventfd. The plain load first keeps
// the flag's cache line shared while it is set, which is the common case under
// load.
func (q *Queue[T]) notify() {
	if q.notified.Load() || !q.notified.CompareAndSwap(false, true) {
		return
	}
	if !q.writeEventfd() {
		// The write did not happen (closed, or an errno recorded in Err): give
		// the flag back so that the next push tries again rather than the queue
		// going deaf behind a flag nobody will clear. Pushes that saw the flag
		// set in the meantime wait for that next push; Err has the cause.
		q.notified.Store(false)
	}
}

// writeEventfd adds 1 to the eventfd counter. It reports whether the counter is
// now known to be non-zero.
func (q *Queue[T]) writeEventfd() bool {
	q.fdMu.RLock()
	defer q.fdMu.RUnlock()
	if q.closed.Load() {
		return false
	}
	for {
		// A raw syscall: the eventfd is non-blocking, so this cannot park the
		// thread, and it keeps Go's netpoller and scheduler out of the path.
		_, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(q.fd), uintptr(unsafe.Pointer(&eventfdOne[0])), 8)
		switch e {
		case 0:
			return true
		case unix.EAGAIN:
			// The counter is at its maximum: it is readable already, so the
			// wakeup is not lost.
			return true
		case unix.EINTR:
			continue
		default:
			q.setErr(os.NewSyscallError("write eventfd", e))
			return false
		}
	}
}

// Acknowledge is the consumer half of the protocol. Call it when epoll reported
// the fd readable (or before a final re-check ahead of sleeping), and before
// Drain. It reads the eventfd counter to zero and only then clears the notified
// flag; with that order, a Push racing with it either is seen by the Drain that
// follows or writes the eventfd again. Consumer-only. After Close it only
// clears the flag.
func (q *Queue[T]) Acknowledge() {
	q.fdMu.RLock()
	if !q.closed.Load() {
		for {
			_, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(q.fd), uintptr(unsafe.Pointer(&q.rbuf[0])), 8)
			if e == unix.EINTR {
				continue
			}
			if e != 0 && e != unix.EAGAIN { // EAGAIN: counter already zero
				q.setErr(os.NewSyscallError("read eventfd", e))
			}
			break
		}
	}
	q.fdMu.RUnlock()
	if testHookAcknowledge != nil {
		testHookAcknowledge()
	}
	q.notified.Store(false)
}

// testHookAcknowledge, when set by a test, runs inside Acknowledge between
// reading the eventfd and clearing the flag: the window a racing Push can hit.
// It lets a test put a push there deterministically. Nil outside tests.
var testHookAcknowledge func()

// Drain pops up to budget items in FIFO order (per producer: one producer's
// items come out in the order it pushed them) and calls fn for each, after the
// item has left the queue, so fn may Push (even into this queue) and a panic in
// fn loses only that item. It returns how many items it delivered and
// pending=true if the next item is already waiting: the owner loop must then
// not block in epoll_wait but treat ingress as ready work in its next round.
// pending is false when the queue is empty, or when the next position has been
// claimed by a producer that has not finished publishing; that producer wakes
// the owner itself. budget <= 0 or a nil fn pops nothing and only reports
// pending. Consumer-only: Drain must not run concurrently with itself (fn must
// not call Drain).
func (q *Queue[T]) Drain(budget int, fn func(T)) (n int, pending bool) {
	var zero T
	for fn != nil && n < budget {
		pos := q.head.Load()
		c := &q.cells[pos&q.mask]
		if c.seq.Load() != pos+1 {
			break // empty, or claimed but not yet published
		}
		v := c.val
		c.val = zero                  // drop references for the GC
		c.seq.Store(pos + q.mask + 1) // free the cell for the producer one lap ahead
		q.head.Store(pos + 1)
		fn(v)
		n++
	}
	pos := q.head.Load()
	return n, q.cells[pos&q.mask].seq.Load() == pos+1
}

// Len returns the approximate number of items in the queue, including those
// being published right now. Safe from any goroutine; it is meant for the
// "ingress depth max" statistic, not for control decisions.
func (q *Queue[T]) Len() int {
	h := q.head.Load()
	t := q.tail.Load() // loaded after head, so t >= h
	n := t - h
	if n > uint64(len(q.cells)) {
		n = uint64(len(q.cells))
	}
	return int(n)
}

// Closed reports whether Close has been called; it lets a caller tell a full
// queue from a closed one after Push returned false.
func (q *Queue[T]) Closed() bool { return q.closed.Load() }

// Err returns the first unexpected eventfd errno seen by Push or Acknowledge
// (anything other than EAGAIN or EINTR), or nil. It should never be non-nil; it
// exists so that such an errno is reported rather than swallowed, since neither
// Push nor Acknowledge has an error result.
func (q *Queue[T]) Err() error {
	if p := q.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (q *Queue[T]) setErr(err error) {
	q.err.CompareAndSwap(nil, &err)
}

// Close closes the eventfd. It is idempotent: later calls return nil. It waits
// for a producer's or the consumer's eventfd syscall in progress (one
// non-blocking syscall at most each), so the fd number is never used after it
// has been released; a producer notifying during Close waits for Close's own
// close syscall in the same way. After Close, Push returns
// false, Acknowledge only clears the flag and Fd returns -1; Drain still works,
// so whoever stops the loop can account for items left in the queue.
func (q *Queue[T]) Close() error {
	q.fdMu.Lock()
	defer q.fdMu.Unlock()
	if q.closed.Load() {
		return nil
	}
	q.closed.Store(true)
	// Not retried on EINTR: on Linux the descriptor is released even then, and
	// a retry could close a number already reused by another goroutine.
	if err := unix.Close(q.fd); err != nil {
		return fmt.Errorf("ingress: close queue: %w", os.NewSyscallError("close", err))
	}
	return nil
}
