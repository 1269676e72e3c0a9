package outq

import (
	"errors"
	"fmt"
	"math"
)

// ErrHardCap means an Append would take the queue past Limits.HardCap. It is
// returned wrapped with the sizes involved; test it with errors.Is.
var ErrHardCap = errors.New("outq: out-queue hard cap exceeded")

// Default watermarks, in bytes.
const (
	DefaultHigh    = 1 << 20
	DefaultLow     = 256 << 10
	DefaultHardCap = 8 << 20
)

// compactMin is the smallest dead prefix worth compacting in Consume. Below it
// the copy would cost more than the space it frees.
const compactMin = 4 << 10

// Limits are a queue's watermarks, in bytes. Reading from the source pauses
// when the queue holds High bytes or more and resumes when it holds Low or
// fewer; a queue never holds more than HardCap bytes. HardCap 0 means unbounded
// (the "unbounded out-queue" mutant).
type Limits struct {
	High    int // pause reading at Len() >= High
	Low     int // resume reading at Len() <= Low; Low < High
	HardCap int // refuse appends beyond this; High <= HardCap; 0 = unbounded
}

// DefaultLimits returns High 1 MiB, Low 256 KiB, HardCap 8 MiB.
func DefaultLimits() Limits {
	return Limits{High: DefaultHigh, Low: DefaultLow, HardCap: DefaultHardCap}
}

// Validate reports whether l is usable: every field >= 0, Low < High, and
// High <= HardCap unless HardCap is 0. The error names the offending field and
// its value.
func (l Limits) Validate() error {
	switch {
	case l.High < 0:
		return fmt.Errorf("outq: Limits.High = %d, must be >= 0", l.High)
	case l.Low < 0:
		return fmt.Errorf("outq: Limits.Low = %d, must be >= 0", l.Low)
	case l.HardCap < 0:
		return fmt.Errorf("outq: Limits.HardCap = %d, must be >= 0 (0 = unbounded)", l.HardCap)
	case l.Low >= l.High:
		return fmt.Errorf("outq: Limits.Low = %d, must be < Limits.High = %d", l.Low, l.High)
	case l.HardCap != 0 && l.High > l.HardCap:
		return fmt.Errorf("outq: Limits.High = %d, must be <= Limits.HardCap = %d (or HardCap 0 = unbounded)", l.High, l.HardCap)
	}
	return nil
}

// Queue is a byte FIFO with watermarks. It is a value type meant to be embedded
// in a source's struct; create it with New. The zero Queue behaves as
// New(Limits{}): unbounded, and paused as soon as it holds any byte.
//
// Invariant: buf[off:] are the pending bytes; buf[:off] is a dead prefix
// already written to the socket.
type Queue struct {
	buf    []byte
	off    int
	lim    Limits
	paused bool
}

// New returns an empty queue with limits l. It does not allocate: the buffer
// is created by the first Append or Reserve. New does not validate l (call
// Limits.Validate when loading configuration); with an invalid l the queue
// still never panics, its watermarks just mean what the numbers say (a
// negative HardCap refuses every non-empty append).
func New(l Limits) Queue { return Queue{lim: l} }

// Limits returns the queue's limits.
func (q *Queue) Limits() Limits { return q.lim }

// Len returns the number of pending (unsent) bytes.
func (q *Queue) Len() int { return len(q.buf) - q.off }

// Empty reports whether no bytes are pending.
func (q *Queue) Empty() bool { return len(q.buf) == q.off }

// Paused reports whether reading from the source must pause: it turned true
// when an Append or Reserve brought Len to High or above, and turns false only
// when Consume (or Flush, or Release) brings Len to Low or below.
func (q *Queue) Paused() bool { return q.paused }

// Pending returns the unsent bytes, oldest first, as one contiguous slice
// aliasing the queue's buffer. It is valid until the next call that modifies
// the queue; the caller must not write to it.
func (q *Queue) Pending() []byte { return q.buf[q.off:] }

// fits reports whether n more bytes respect the hard cap (and int range).
func (q *Queue) fits(n int) bool {
	l := q.Len()
	if n > math.MaxInt-l {
		return false
	}
	return q.lim.HardCap == 0 || l+n <= q.lim.HardCap
}

// Append copies p to the tail of the queue. If Len()+len(p) would exceed
// HardCap, nothing is appended and the error wraps ErrHardCap with the sizes;
// the connection should then be closed. Append allocates only when the buffer
// must grow.
func (q *Queue) Append(p []byte) error {
	if !q.fits(len(p)) {
		return fmt.Errorf("%w: %d pending + %d appended > hard cap %d bytes", ErrHardCap, q.Len(), len(p), q.lim.HardCap)
	}
	copy(q.grow(len(p)), p)
	return nil
}

// Reserve extends the queue by n bytes and returns them, so a frame (a REJECT,
// a STOP_ACK) can be built in place without a temporary buffer. The returned
// slice has length n and arbitrary contents: the caller must write all n
// bytes before the next call on the queue, after which the slice must not be
// used. The bytes count as queued at once (Len, Paused).
//
// Reserve returns nil, and leaves the queue unchanged, if n < 0 or if n more
// bytes would exceed HardCap (the Append rule; no error value, to keep the
// frame-building call site allocation-free — treat nil as ErrHardCap).
// Reserve(0) returns an empty, possibly nil, slice.
func (q *Queue) Reserve(n int) []byte {
	if n < 0 || !q.fits(n) {
		return nil
	}
	return q.grow(n)
}

// grow extends buf by n bytes and returns them. It reuses the dead prefix
// before allocating, and allocates only for the pending bytes plus n.
func (q *Queue) grow(n int) []byte {
	l := len(q.buf)
	if n == 0 {
		return q.buf[l:l:l]
	}
	if n > cap(q.buf)-l {
		live := l - q.off
		if q.off > 0 && live+n <= cap(q.buf) {
			// Compacting makes room: move the live bytes to the front.
			copy(q.buf[:cap(q.buf)], q.buf[q.off:l])
		} else {
			nb := make([]byte, live, newCap(cap(q.buf), live+n))
			copy(nb, q.buf[q.off:l])
			q.buf = nb
		}
		q.buf = q.buf[:live]
		q.off = 0
		l = live
	}
	q.buf = q.buf[:l+n]
	if q.Len() >= q.lim.High {
		q.paused = true
	}
	return q.buf[l : l+n : l+n]
}

// newCap doubles old until it holds need (at least 512 bytes), so growth is
// amortised O(1) per byte.
func newCap(old, need int) int {
	c := max(old, 512)
	for c < need {
		if c > math.MaxInt/2 {
			return need
		}
		c *= 2
	}
	return c
}

// Consume drops the first n pending bytes (they were written to the socket).
// n is clamped to [0, Len()]. When the queue empties its buffer is rewound to
// the start, so the capacity is reused without copying; otherwise, once the
// dead prefix is both large (>= 4 KiB) and at least as long as the pending
// bytes, the pending bytes are moved to the front (each copy is paid for by
// the consumed bytes, so compaction is amortised O(1) per byte).
func (q *Queue) Consume(n int) {
	n = min(max(n, 0), q.Len())
	q.off += n
	switch live := len(q.buf) - q.off; {
	case live == 0:
		q.buf = q.buf[:0]
		q.off = 0
	case q.off >= compactMin && q.off >= live:
		copy(q.buf, q.buf[q.off:])
		q.buf = q.buf[:live]
		q.off = 0
	}
	if q.Len() <= q.lim.Low {
		q.paused = false
	}
}

// Detach takes the buffer away from an empty queue and returns it (length
// 0, capacity kept), so its owner can lend it to another connection: an
// idle connection then holds no out-queue memory. It returns nil, and
// changes nothing, if the queue has pending bytes or no buffer. The queue
// stays usable: its next Append is given a buffer by Attach, or allocates.
func (q *Queue) Detach() []byte {
	if !q.Empty() || q.buf == nil {
		return nil
	}
	b := q.buf[:0]
	q.buf, q.off = nil, 0
	return b
}

// Attach gives a queue that holds no buffer the buffer b (its contents are
// ignored) and reports whether it took it; a queue that has a buffer keeps
// its own.
func (q *Queue) Attach(b []byte) bool {
	if q.buf != nil {
		return false
	}
	q.buf, q.off = b[:0], 0
	return true
}

// Release drops the buffer and all pending bytes (on close), so the closed
// connection holds no memory. The limits are kept; the queue is empty and not
// paused, and may be used again.
func (q *Queue) Release() {
	q.buf = nil
	q.off = 0
	q.paused = false
}
