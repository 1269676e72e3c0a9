//go:build linux

package loadgen

// The churn (Config.ChurnRate): one loop's share of the schedule, the
// life of each churn connection (connect, one frame, its answer, an RST)
// and its accounting (ChurnOutcome).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/epollsys"
	"github.com/reactorlab/reactorlab/reactors/slots"
	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/wire"
)

// churnSlotBase is the first slot of the churn connections in the Refs of
// their epoll events (slot churnSlotBase + i is churner.conns[i]): above
// every source's slot (its index in loop.conns) and below the loop's own
// fds' (refTimer, refWake).
const churnSlotBase = 1 << 31

// churnTokenBit is set in the serial (low 32 bits) of every churn
// connection's token, so that it is never a source's.
const churnTokenBit = 1 << 31

type churnPhase uint8

const (
	churnFree       churnPhase = iota // the slot is unused
	churnConnecting                   // non-blocking connect in progress
	churnOpen                         // connected: writing its frame, then reading the answer
)

// churnConn is one churn connection, in a slot of the churner's table.
type churnConn struct {
	fd       int
	gen      uint32 // bumped per connection in the slot, never 0
	phase    churnPhase
	token    uint64
	intended int64  // its instant, ns since t0
	opened   int64  // when connect was called
	deadline int64  // connecting: when it times out
	written  int    // bytes of its frame written
	digest   uint64 // of its frame's payload
	split    splitter
}

// churnPending is a connecting slot, in the order opened (so in the order
// of their deadlines); stale once the slot's generation moved on.
type churnPending struct {
	idx int
	gen uint32
}

// churnSchedule is one loop's bursts: burst m of the run is intended at
// start + m·period; the loop's burst j is the run's burst j·loops + index,
// computed as the run's is, so that the loops' bursts together are the
// one-loop schedule to the nanosecond.
type churnSchedule struct {
	start        int64   // the measured schedule's start, ns since t0
	period       float64 // ns between the run's bursts
	index, loops uint64
}

// intended returns the intended instant of the loop's burst j.
func (s churnSchedule) intended(j uint64) int64 {
	return s.start + int64(float64(j*s.loops+s.index)*s.period)
}

// firstFrom returns the loop's first burst intended at or after t.
func (s churnSchedule) firstFrom(t int64) uint64 {
	if t <= s.intended(0) {
		return 0
	}
	j := uint64(float64(t-s.start) / s.period / float64(s.loops))
	for j > 0 && s.intended(j-1) >= t {
		j--
	}
	for s.intended(j) < t {
		j++
	}
	return j
}

// churner is one loop's share of the churn: bursts k of the run with k mod
// Loops == its loop's index, each burst's connections due at its instant,
// at most limit open at once.
type churner struct {
	l *loop
	churnSchedule
	sa       unix.Sockaddr
	burst    int
	limit    int    // open at once: this loop's share of ChurnMax
	started  bool   // the measured schedule has begun (start)
	next     uint64 // next burst to open
	endBurst uint64 // first burst intended at or after the end of sending
	grain    int64  // burst instants rounded up to multiples of it (0: exact)

	conns   []churnConn
	free    []int // free slots, as a stack
	open    int   // slots not free
	pending []churnPending
	head    int // pending[head:] may be live
	serial  uint32
	frame   []byte // the frame being written (rebuilt for each write)
	counts  ChurnOutcome

	cChurn, cRaw, cLag *record.Class
}

// newChurner returns loop index's share of n: every n-th burst from the
// index-th, and ChurnMax dealt as evenly as it goes (Validate keeps each
// share >= 1).
func newChurner(l *loop, index, n int, sa unix.Sockaddr) *churner {
	cfg := l.cfg
	period := 1e9 * float64(cfg.ChurnBurst) / cfg.ChurnRate // between the run's bursts, ns
	limit := cfg.ChurnMax / n
	if index < cfg.ChurnMax%n {
		limit++
	}
	ch := &churner{l: l, churnSchedule: churnSchedule{period: period, index: uint64(index), loops: uint64(n)},
		sa: sa, burst: cfg.ChurnBurst, limit: limit, conns: make([]churnConn, limit), free: make([]int, limit),
		frame: make([]byte, wire.HeaderSize+cfg.Payload)}
	for i := range ch.conns {
		ch.conns[i].fd = -1
		ch.free[i] = limit - 1 - i // slot 0 on top
	}
	if cfg.ChurnRate/float64(cfg.ChurnBurst)*sendGrain.Seconds() > 1 {
		ch.grain = int64(sendGrain) // as the steady sources are batched
	}
	return ch
}

// begin starts the churn's measured schedule at l.schedStart: its bursts
// are offset by it and end at the end of sending.
func (ch *churner) begin() {
	l := ch.l
	ch.start = l.schedStart
	ch.endBurst = ch.firstFrom(l.sendEnd)
	ch.cChurn, _ = l.rec.Class(ClassChurn) // constant names: valid
	ch.cRaw, _ = l.rec.Class(ClassChurnUncorrected)
	ch.cLag, _ = l.rec.Class(ClassChurnLag)
	ch.started = true
}

// fire opens the bursts due and times out the connects overdue; it
// returns the churn's next deadline.
func (ch *churner) fire() int64 {
	ch.openDue()
	ch.expire()
	w := int64(never)
	if ch.due() {
		w = ch.intended(ch.next)
		if g := ch.grain; g > 0 {
			w = (w + g - 1) / g * g
		}
	}
	if p, ok := ch.oldestPending(); ok {
		w = min(w, ch.conns[p.idx].deadline)
	}
	return w
}

// due reports whether bursts remain to open while sending.
func (ch *churner) due() bool {
	return ch.started && ch.l.phase == phaseSending && ch.next < ch.endBurst
}

// openDue opens every burst due at l.now, each connection stamped with
// its burst's instant: one due while the loop's share of ChurnMax is open
// is skipped and counted.
func (ch *churner) openDue() {
	l := ch.l
	for ch.due() && ch.intended(ch.next) <= l.now {
		at := ch.intended(ch.next)
		ch.next++
		for range ch.burst {
			ch.counts.Scheduled++
			if ch.open >= ch.limit {
				ch.counts.Skipped++
				continue
			}
			ch.openOne(at)
		}
	}
}

// openOne starts connecting a churn connection intended at at.
func (ch *churner) openOne(at int64) {
	l := ch.l
	now := l.clock()
	ch.counts.Opened++
	if ch.cLag != nil {
		ch.cLag.Record(time.Duration(now - at))
	}
	fd, connected, err := dial(ch.sa)
	if err != nil {
		ch.connectFailed(err, "connect")
		return
	}
	idx := ch.free[len(ch.free)-1]
	ch.free = ch.free[:len(ch.free)-1]
	ch.open++
	ch.counts.MaxOpen = max(ch.counts.MaxOpen, ch.open)
	cc := &ch.conns[idx]
	ch.serial++
	*cc = churnConn{fd: fd, gen: max(cc.gen+1, 1), token: l.prefix | churnTokenBit | uint64(ch.serial&(churnTokenBit-1)),
		intended: at, opened: now, split: cc.split}
	cc.split.reset()
	cc.split.max = max(len(ch.frame), 64<<10)
	if connected {
		ch.connected(idx)
		return
	}
	cc.phase, cc.deadline = churnConnecting, now+int64(l.cfg.ConnectTimeout)
	if err := ch.interest(idx, unix.EPOLLOUT, unix.EPOLL_CTL_ADD); err != nil {
		ch.release(idx, false)
		ch.connectFailed(err, "epoll_ctl")
		return
	}
	ch.pending = append(ch.pending, churnPending{idx, cc.gen})
}

// interest registers (op) or changes slot idx's epoll events.
func (ch *churner) interest(idx int, events uint32, op int) error {
	cc := &ch.conns[idx]
	if err := epollsys.Ctl(ch.l.epfd, op, cc.fd, events, slots.MakeRef(uint32(churnSlotBase+idx), cc.gen)); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// connectFailed counts a connect that failed with err (op the call that
// did): refused (ECONNREFUSED, or ECONNRESET during the handshake) or
// another connect error, with evidence.
func (ch *churner) connectFailed(err error, op string) {
	if errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.ECONNRESET) {
		ch.counts.Refused++
		return
	}
	ch.counts.ConnectErrors++
	ch.evidence("%s: %v", op, err)
}

// oldestPending returns the oldest connect still in progress, dropping
// the stale entries before it.
func (ch *churner) oldestPending() (churnPending, bool) {
	for ch.head < len(ch.pending) {
		p := ch.pending[ch.head]
		if cc := &ch.conns[p.idx]; cc.gen == p.gen && cc.phase == churnConnecting {
			return p, true
		}
		ch.head++
	}
	ch.pending, ch.head = ch.pending[:0], 0
	return churnPending{}, false
}

// expire times out the connects whose deadline has passed.
func (ch *churner) expire() {
	for {
		p, ok := ch.oldestPending()
		if !ok || ch.conns[p.idx].deadline > ch.l.now {
			break
		}
		ch.counts.ConnectTimeouts++
		ch.release(p.idx, false)
	}
	if ch.head > 64 && ch.head > len(ch.pending)/2 {
		ch.pending = slices.Delete(ch.pending, 0, ch.head)
		ch.head = 0
	}
}

// onEvent handles an epoll event of a churn connection.
func (ch *churner) onEvent(r slots.Ref, ev uint32) {
	idx := int(r.Slot() - churnSlotBase)
	if idx >= len(ch.conns) {
		return
	}
	cc := &ch.conns[idx]
	if cc.phase == churnFree || cc.gen != r.Gen() {
		return // a connection since closed
	}
	if cc.phase == churnConnecting {
		if ev&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			return
		}
		if err := connectResult(cc.fd); err != nil {
			ch.release(idx, false)
			ch.connectFailed(err, "connect")
			return
		}
		ch.connected(idx)
		return
	}
	if ev&unix.EPOLLOUT != 0 && cc.written < len(ch.frame) {
		ch.write(idx)
		if cc.phase == churnFree {
			return
		}
	}
	if ev&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP) != 0 {
		ch.read(idx)
	}
}

// connected counts slot idx's connection established and writes its
// frame.
func (ch *churner) connected(idx int) {
	cc := &ch.conns[idx]
	op := unix.EPOLL_CTL_MOD
	if cc.phase != churnConnecting {
		op = unix.EPOLL_CTL_ADD // established at once: not in the set yet
	}
	ch.counts.Connected++
	cc.phase = churnOpen
	if err := ch.interest(idx, unix.EPOLLIN, op); err != nil {
		ch.evidence("%v", err)
		ch.counts.Unanswered++ // connected, never answered: judged at the end
		ch.release(idx, true)
		return
	}
	ch.write(idx)
}

// write writes what is left of slot idx's frame, rebuilt from its token
// (DATA, seq 0, stamped with its intended instant, the payload
// wire.FillPattern(token, 0)); a full socket waits for EPOLLOUT.
func (ch *churner) write(idx int) {
	cc := &ch.conns[idx]
	f := ch.frame
	wire.PutHeader(f, wire.Header{Length: uint32(len(f) - 4), Kind: wire.KindData, Token: cc.token, Seq: 0, SendNs: uint64(cc.intended)})
	cc.digest = fillPattern(f[wire.HeaderSize:], cc.token, 0)
	for cc.written < len(f) {
		n, e := epollsys.Write(cc.fd, f[cc.written:])
		switch {
		case e == unix.EAGAIN:
			if err := ch.interest(idx, unix.EPOLLIN|unix.EPOLLOUT, unix.EPOLL_CTL_MOD); err != nil {
				ch.evidence("%v", err)
				ch.counts.Unanswered++
				ch.release(idx, true)
			}
			return
		case e != 0:
			ch.counts.Reset++
			ch.release(idx, false)
			return
		}
		cc.written += n
	}
	if cc.written == len(f) {
		_ = ch.interest(idx, unix.EPOLLIN, unix.EPOLL_CTL_MOD) // EPOLLOUT off; a failure leaves it on, which costs wake-ups only
	}
}

// read reads slot idx's answer, and settles the connection once it is
// whole, or once the target reset or closed it.
func (ch *churner) read(idx int) {
	l := ch.l
	cc := &ch.conns[idx]
	n, e := epollsys.Read(cc.fd, l.readBuf)
	now := l.clock()
	switch {
	case e == unix.EAGAIN:
		return
	case e != 0:
		ch.counts.Reset++
		ch.release(idx, false)
		return
	case n == 0:
		if l.stopWasSent() {
			ch.counts.Unanswered++ // judged by the STOP's fate at the end
		} else {
			ch.counts.Closed++
			ch.evidence("token %#x: closed by the target after %d bytes of its answer, %.3f s after its instant",
				cc.token, len(cc.split.held), time.Duration(now-cc.intended).Seconds())
		}
		ch.release(idx, false)
		return
	}
	cc.split.feed(l.readBuf[:n])
	f, ok, err := cc.split.next()
	switch {
	case err != nil:
		ch.counts.WrongBytes++
		ch.evidence("token %#x: answer stream broken: %v", cc.token, err)
	case !ok:
		return // the rest of the answer is to come
	case len(cc.split.in) > 0:
		ch.counts.WrongBytes++
		ch.evidence("token %#x: %d bytes after the answer to its one frame", cc.token, len(cc.split.in))
	default:
		ch.settle(cc, f, now)
	}
	ch.release(idx, true)
}

// settle judges the one answer f of cc, received at now.
func (ch *churner) settle(cc *churnConn, f []byte, now int64) {
	kind, token, seq := wire.Kind(f[4]), binary.LittleEndian.Uint64(f[8:]), binary.LittleEndian.Uint64(f[16:])
	switch {
	case kind == wire.KindData && token == cc.token && seq == 0 && len(f) == len(ch.frame) && f[5] == 0 &&
		int64(binary.LittleEndian.Uint64(f[24:])) == cc.intended && digest(f[wire.HeaderSize:]) == cc.digest:
		ch.counts.Answered++
		ch.cChurn.Record(time.Duration(now - cc.intended))
		ch.cRaw.Record(time.Duration(now - cc.opened))
	case kind == wire.KindReject && token == cc.token && seq == 0:
		ch.counts.Rejected++
	default:
		h := frameHeader(f)
		ch.counts.WrongBytes++
		ch.evidence("token %#x: answered with %v (token %#x, seq %d, %d payload bytes, send ns %d), sent DATA seq 0 with %d payload bytes",
			cc.token, h.Kind, h.Token, h.Seq, h.PayloadLen(), h.SendNs, len(ch.frame)-wire.HeaderSize)
	}
}

// release closes slot idx's connection (with an RST if reset: no
// TIME_WAIT is left; see ChurnOutcome) and frees the slot.
func (ch *churner) release(idx int, reset bool) {
	cc := &ch.conns[idx]
	if reset {
		_ = closeReset(cc.fd)
	} else {
		unix.Close(cc.fd) // closing removes it from the epoll set
	}
	cc.fd, cc.phase = -1, churnFree
	ch.open--
	ch.free = append(ch.free, idx)
}

// finish settles what is open at the end of the run: a connect still in
// progress is a connect timeout, a connection without its answer is
// unanswered.
func (ch *churner) finish() {
	for idx := range ch.conns {
		switch ch.conns[idx].phase {
		case churnConnecting:
			ch.counts.ConnectTimeouts++
			ch.release(idx, false)
		case churnOpen:
			ch.counts.Unanswered++
			ch.release(idx, true)
		}
	}
}

// closeAll closes every churn connection's descriptor, settling nothing
// (the run failed).
func (ch *churner) closeAll() {
	for i := range ch.conns {
		if cc := &ch.conns[i]; cc.fd >= 0 {
			unix.Close(cc.fd)
			cc.fd = -1
		}
	}
}

// evidence keeps the first few anomalies.
func (ch *churner) evidence(format string, args ...any) {
	if len(ch.counts.Evidence) < maxChurnEvidence {
		ch.counts.Evidence = append(ch.counts.Evidence, fmt.Sprintf(format, args...))
	}
}
