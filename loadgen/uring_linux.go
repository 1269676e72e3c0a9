//go:build linux

package loadgen

// The uring engine (Config.Engine = EngineUring): a loop's I/O on one
// io_uring of its own, once its sources are connected. The sources, the
// schedule, the accounting and the self-check are the epoll engine's code;
// only the system calls under them differ:
//
//   - receiving: one multishot recv per connection, armed once, taking its
//     buffers from the loop's provided buffer ring; each completion's bytes
//     go to conn.onAnswers where they lie, and the buffer goes back to the
//     ring before the next enter. ENOBUFS (the ring ran empty) is
//     backpressure, never end of stream: the recv is armed again;
//   - sending: where the epoll engine writes, a connection with bytes to
//     send joins the round's send queue; at the end of the round one send
//     per queued connection (at most one in flight each, from the
//     connection's pending bytes, which stay unchanged until it completes)
//     is submitted with the wait in a single io_uring_enter. A send's
//     completion marks its frames sent, as a write does. The bytes are
//     the connection's Go memory, pinned by the ring until the send
//     completes (a pin reuses its table entry: nothing is allocated per
//     send);
//   - waiting: io_uring_enter with GETEVENTS until one completion or the
//     loop's next deadline (the ring's own timeout, so no timerfd); the
//     group wakes the loop through the ring's Waker (an eventfd read);
//   - closing: the connection's operations are cancelled by their
//     user_data (never by descriptor, whose number may be reused), then
//     the descriptor is closed; a completion of an earlier connection of
//     the same source is recognised by its generation and dropped.
//
// Connecting stays on epoll (a non-blocking connect and EPOLLOUT): it
// happens before the measured schedule, so it costs the measurement
// nothing, and the descriptors' epoll interest is left alone afterwards.

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/uring"
)

// The kinds of the engine's user_data (top bits); a connection's operation
// also carries the connection's index (bits 32-59) and generation (bits
// 0-31), so that its completion finds the connection and is dropped if the
// connection has been replaced since.
const (
	udRecv   uint64 = 1 << 60
	udSend   uint64 = 2 << 60
	udCancel uint64 = 3 << 60
	udWake   uint64 = 4 << 60
	udKind   uint64 = 7 << 60
)

// uringBufSize is the size of each buffer of a loop's buffer ring: a
// multishot recv fills at most one buffer per completion.
const uringBufSize = 16 << 10

// uringMaxBufs bounds a loop's buffers (2048 × 16 KiB = 32 MiB).
const uringMaxBufs = 2048

// EngineAvailable reports whether engine can run here: nil for EngineEpoll;
// for EngineUring, a ring is created with a provided buffer ring (Linux
// 5.19) and the kernel must support RECV, SEND and ASYNC_CANCEL; otherwise
// the error names the call, its errno and a hint (a *uring.Error, which
// errors.As finds). An unknown engine is an error wrapping ErrConfig.
func EngineAvailable(engine string) error {
	switch engine {
	case EngineEpoll, "":
		return nil
	case EngineUring:
	default:
		return fmt.Errorf("%w: loadgen-engine = %q (accepted: %s or %s)", ErrConfig, engine, EngineEpoll, EngineUring)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r, err := uring.New(uring.Config{Entries: 4})
	if err != nil {
		return fmt.Errorf("loadgen: the %s engine needs io_uring: %w", EngineUring, err)
	}
	defer r.Close()
	p, err := r.Probe()
	if err != nil {
		return fmt.Errorf("loadgen: the %s engine needs io_uring: %w", EngineUring, err)
	}
	for _, op := range []string{"RECV", "SEND", "ASYNC_CANCEL"} {
		if !p.Supports(op) {
			return fmt.Errorf("loadgen: the %s engine needs io_uring's %s, which kernel %s does not support: use --loadgen-engine %s", EngineUring, op, p.Kernel, EngineEpoll)
		}
	}
	br, err := r.NewBufRing(0, 1, 64)
	if err != nil {
		return fmt.Errorf("loadgen: the %s engine needs provided buffer rings: %w", EngineUring, err)
	}
	return br.Close()
}

// uringIO is one loop's ring and what the engine keeps per round. It is
// used only by the loop's goroutine, on the locked thread that created the
// ring.
type uringIO struct {
	l     *loop
	ring  *uring.Ring
	br    *uring.BufRing
	waker *uring.Waker
	// active: the sources are connected and their I/O goes through the
	// ring (from the start of sending).
	active bool
	// sendq holds the connections with bytes to send and no send in flight
	// (each once: conn.urSendQueued); armq those whose recv is to be armed
	// (conn.urArmQueued). Both are submitted with the round's enter.
	sendq, armq []*conn
	err         error       // the first failure to prepare an operation outside wait; wait returns it
	stats       uring.Stats // the ring's counters, kept when it is closed
}

// userDataOf names an operation of kind on c's current connection.
func userDataOf(kind uint64, c *conn) uint64 { return kind | uint64(c.idx)<<32 | uint64(c.gen) }

// openRing creates the loop's ring, its buffer ring and its waker, on the
// calling goroutine's locked thread (the loop's).
func (l *loop) openRing() error {
	n := len(l.all)
	r, err := uring.New(uring.Config{Entries: uint32(min(ringFor(2*n+8), 4096))})
	if err != nil {
		return fmt.Errorf("loadgen: loop %d: %w", l.index, err)
	}
	u := &uringIO{l: l, ring: r}
	if u.br, err = r.NewBufRing(0, min(ringFor(2*n), uringMaxBufs), uringBufSize); err == nil {
		u.waker, err = r.NewWaker(udWake)
	}
	if err != nil {
		r.Close()
		return fmt.Errorf("loadgen: loop %d: %w", l.index, err)
	}
	l.ur = u
	return nil
}

// closeRing closes the loop's ring on its thread, cancelling what is in
// flight, and keeps its counters. The
// waker's eventfd stays open until closeAll: other loops may still write
// it.
func (l *loop) closeRing() {
	if u := l.ur; u != nil && u.ring != nil {
		if err := u.ring.Close(); err != nil && u.err == nil {
			u.err = err
		}
		u.stats = u.ring.Stats()
		u.ring = nil
		u.active = false // every operation has ended: descriptors close as on epoll
	}
}

// activate hands the connected sources' I/O to the ring at the start of
// sending: their recvs are armed, and wakes go to the ring's waker from
// now on. A wake written to the eventfd before then is read from the
// group's state at once (onWake), since the loop will not look there again.
func (u *uringIO) activate() {
	l := u.l
	u.active = true
	for _, c := range l.conns {
		if c.fd >= 0 && c.state != stDead {
			u.queueArm(c)
		}
	}
	l.waker.Store(u.waker)
	l.onWake()
}

// queueSend notes that c has bytes to send (c.out[c.outOff:]).
func (u *uringIO) queueSend(c *conn) {
	if !c.urSendQueued && !c.urSending {
		c.urSendQueued = true
		u.sendq = append(u.sendq, c)
	}
}

// queueArm notes that c's recv is to be armed.
func (u *uringIO) queueArm(c *conn) {
	if !c.urArmQueued && !c.urRecvArmed {
		c.urArmQueued = true
		u.armq = append(u.armq, c)
	}
}

// cancel asks for the end of c's operations in flight before its
// descriptor is closed: by user_data, so that a later connection given the
// same descriptor number keeps its own.
func (u *uringIO) cancel(c *conn) {
	for _, op := range []struct {
		on   bool
		kind uint64
	}{{c.urRecvArmed, udRecv}, {c.urSending, udSend}} {
		if !op.on {
			continue
		}
		if _, err := u.ring.CancelUserData(userDataOf(op.kind, c), udCancel); err != nil && u.err == nil {
			u.err = err
		}
	}
	c.urRecvArmed, c.urSending = false, false
}

// prepare turns the round's queues into SQEs.
func (u *uringIO) prepare() error {
	for _, c := range u.sendq {
		c.urSendQueued = false
		if c.fd < 0 || c.state == stDead || c.urSending || c.outOff >= len(c.out) {
			continue
		}
		if _, err := u.ring.Send(c.fd, c.out[c.outOff:], userDataOf(udSend, c)); err != nil {
			return err
		}
		c.urSending = true
	}
	u.sendq = u.sendq[:0]
	for _, c := range u.armq {
		c.urArmQueued = false
		if c.fd < 0 || c.state == stDead || c.urRecvArmed {
			continue
		}
		if _, err := u.ring.RecvMultishot(c.fd, u.br, userDataOf(udRecv, c)); err != nil {
			return err
		}
		c.urRecvArmed = true
	}
	u.armq = u.armq[:0]
	return nil
}

// wait submits the round's operations and waits, in one io_uring_enter,
// for a completion or deadline (ns since t0), then handles every
// completion. Like the epoll engine it spins (enters without sleeping)
// through a wait shorter than spinWait, and passes through the Go
// scheduler every yieldEvery.
func (u *uringIO) wait(deadline int64) error {
	l := u.l
	if err := u.prepare(); err != nil {
		return fmt.Errorf("loadgen: loop %d: %w", l.index, err)
	}
	var err error
	spin := deadline > l.now && deadline-l.clock() <= int64(spinWait)
	switch {
	case deadline <= l.now:
		_, err = u.ring.Submit()
	case spin:
		for err == nil && u.ring.Ready() == 0 && l.clock() < deadline {
			_, err = u.ring.Submit()
		}
	default:
		if l.now-l.lastYield >= yieldEvery {
			l.lastYield = l.now
			runtime.Gosched()
		}
		wait := time.Duration(-1)
		if deadline != never {
			wait = time.Duration(max(deadline-l.clock(), 0))
		}
		_, err = u.ring.Wait(1, wait)
	}
	if err != nil {
		return fmt.Errorf("loadgen: loop %d: %w", l.index, err)
	}
	// The wait may have slept for as long as the target stalled: what the
	// completions settle is stamped with the time after it.
	l.clock()
	if _, err := u.ring.Reap(u.complete); err != nil {
		return fmt.Errorf("loadgen: loop %d: %w", l.index, err)
	}
	u.br.Advance()
	if err := u.err; err != nil {
		u.err = nil
		return fmt.Errorf("loadgen: loop %d: %w", l.index, err)
	}
	return nil
}

// complete handles one completion.
func (u *uringIO) complete(cq uring.CQE) {
	l := u.l
	kind := cq.UserData & udKind
	switch kind {
	case udWake:
		l.onWake()
		if err := u.waker.Rearm(); err != nil && u.err == nil {
			u.err = err
		}
		return
	case udCancel:
		return // ENOENT (it had ended) or the count cancelled: either is fine
	}
	idx, gen := int(cq.UserData>>32&0x0fffffff), uint32(cq.UserData)
	if idx >= len(l.all) {
		if u.err == nil {
			u.err = fmt.Errorf("a completion with user_data %#x names no connection", cq.UserData)
		}
		return
	}
	c := l.all[idx]
	current := c.gen == gen && c.fd >= 0
	switch kind {
	case udRecv:
		bid, hasBuf := cq.BufferID()
		if current && !cq.More() {
			c.urRecvArmed = false
		}
		switch {
		case !current:
		case cq.Res > 0:
			// Stamped when handled, as the epoll engine stamps each read:
			// the completions before it in this reap took their time.
			c.onAnswers(u.br.Bytes(bid, int(cq.Res)), l.clock())
		case cq.Res == 0:
			c.peerEnded(errEOF)
		case cq.Res == -int32(unix.ENOBUFS), cq.Res == -int32(unix.ECANCELED):
			// ENOBUFS: the buffer ring ran empty; the bytes wait in the
			// socket, and the recv is armed again below.
		default:
			c.peerEnded(os.NewSyscallError("recv", unix.Errno(-cq.Res)))
		}
		if hasBuf {
			u.br.Add(bid) // published by the Advance after the reap
		}
		if c.gen == gen && c.fd >= 0 && c.state != stDead && !c.urRecvArmed {
			u.queueArm(c)
		}
	case udSend:
		if !current {
			return
		}
		c.urSending = false
		switch {
		case cq.Res >= 0:
			n := int(cq.Res)
			c.outOff += n
			c.written += uint64(n)
			c.markSent()
			if c.outOff < len(c.out) {
				u.queueSend(c) // a short send: the rest next round
				return
			}
			c.out, c.outOff = c.out[:0], 0
			if c.state == stOpen {
				c.resume()
			}
		case cq.Res == -int32(unix.ECANCELED):
		default:
			c.targetClosed(os.NewSyscallError("send", unix.Errno(-cq.Res)))
		}
	default:
		if u.err == nil {
			u.err = fmt.Errorf("a completion with user_data %#x of no kind the engine submits", cq.UserData)
		}
	}
}

// uringCountsOf sums the ring counters of the loops serving conns (nil on
// the epoll engine).
func uringCountsOf(conns []*conn) *UringCounts {
	var out *UringCounts
	seen := map[*loop]bool{}
	for _, c := range conns {
		l := c.l
		if seen[l] || l.ur == nil {
			continue
		}
		seen[l] = true
		if out == nil {
			out = &UringCounts{}
		}
		s := l.ur.stats
		out.Enters += s.Enters
		out.Submitted += s.Submitted
		out.Reaped += s.Reaped
		out.OverflowFlushes += s.OverflowFlushes
		out.NoBuffers += s.NoBuffers
	}
	return out
}
