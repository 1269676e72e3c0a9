package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/reactorlab/reactorlab/internal/inetdiag"
	"github.com/reactorlab/reactorlab/wire"
)

// The cases about work a server still holds for a connection (I2, I3, W4)
// are only as good as their precondition: that the server really holds
// echoes in its own (user-space) buffers, or has stopped reading the
// connection, when the connection goes away. Kernel socket buffers on
// loopback absorb megabytes, so a client that sends "a lot" may find
// nothing queued in the server at all. These cases therefore drive data
// into the server and measure that it got there: a client with tiny
// socket buffers sends, never reading, while inet_diag shows the queues
// of both ends; what the client sent, less what it read back and what the
// four kernel queues hold, is what the server holds itself.

// smallClientBuf is the client's SO_RCVBUF (the kernel doubles it): the
// client takes a few KiB of echoes, the rest backs up into the server.
// clientSendBuf is its SO_SNDBUF: small beside the server's buffers, so
// the client's writes block soon after the server stops reading, and not
// so small that every write waits for an acknowledgement.
const (
	smallClientBuf = 4 << 10
	clientSendBuf  = 64 << 10
)

// streamFrameSize is the size of every frame of a loaded connection's
// stream: DATA frames of the connection's token, seq 0, 1, …, send time
// 0, so byte o of the stream is known from o alone.
const streamFrameSize = 4 << 10

// sockQueues are the kernel queues of one loopback connection, both ends,
// in bytes: unsent is written by the application but not yet acknowledged
// by the peer, unread is received but not yet read by the application.
type sockQueues struct {
	clientUnsent, clientUnread int64
	serverUnread, serverUnsent int64
	serverState                uint8
	// serverGone: the server's end is no longer in the kernel's tables
	// (closed, and everything it had to send acknowledged).
	serverGone bool
}

// kernel is everything the four queues hold.
func (q sockQueues) kernel() int64 {
	return q.clientUnsent + q.clientUnread + q.serverUnread + q.serverUnsent
}

// serverOpen reports whether the server's end is open in a state in which
// it can still hold echoes and deliver them: ESTABLISHED, or CLOSE_WAIT
// (it has the client's FIN, and has not closed or shut down its side).
// Closed (LAST_ACK, CLOSING, TIME_WAIT, gone) or half-closed by the server
// (FIN_WAIT1, FIN_WAIT2), it holds nothing it will still send: what the
// client did not get back by then was dropped, not held.
func (q sockQueues) serverOpen() bool {
	return !q.serverGone && (q.serverState == tcpEstablished || q.serverState == tcpCloseWait)
}

// outputBlocked: the server has unsent echoes in its send queue and the
// client has unread bytes: the path back to the client is backed up.
func (q sockQueues) outputBlocked() bool {
	return q.serverUnsent > 0 && q.clientUnread > 0
}

// finPassed reports whether a read of the server's has passed the
// client's FIN: its end sits in CLOSE_WAIT with nothing left unread (the
// FIN counts one byte of the unread queue until a read passes it), or has
// gone past it (LAST_ACK, CLOSING, TIME_WAIT, CLOSE: closed, or gone). In
// ESTABLISHED, FIN_WAIT1 or FIN_WAIT2 the FIN has not arrived. A read
// that returned data passes a FIN queued behind it too (Linux advances
// past the FIN in the same call when the buffer has room), and its
// application has not seen the end of the stream yet: see
// loaded.finRead.
func (q sockQueues) finPassed() bool {
	switch {
	case q.serverGone:
		return true
	case q.serverState == tcpCloseWait:
		return q.serverUnread == 0
	}
	return q.serverState != tcpEstablished && q.serverState != tcpFinWait1 && q.serverState != tcpFinWait2
}

// finAlone: the server's end is in CLOSE_WAIT with the FIN alone unread
// (every byte of data read): its next read can only return the end of the
// stream.
func (q sockQueues) finAlone() bool {
	return !q.serverGone && q.serverState == tcpCloseWait && q.serverUnread == 1
}

func (q sockQueues) String() string {
	if q.serverGone {
		return fmt.Sprintf("client unsent %d unread %d; the server's end is gone", q.clientUnsent, q.clientUnread)
	}
	return fmt.Sprintf("client unsent %d unread %d; server unread %d unsent %d (%s)", q.clientUnsent, q.clientUnread, q.serverUnread, q.serverUnsent, inetdiag.StateName(q.serverState))
}

// loaded is a client connection that sends the stream of its token and
// reads (and checks) what comes back only when told to.
type loaded struct {
	name  string
	conn  *net.TCPConn
	socks *connQueues // conn's two ends in the kernel's tables
	token uint64
	sent  int64 // bytes of the stream written
	read  int64 // bytes read back (all checked)
	q     sockQueues
	pend  []byte // the rest of a frame a write left unwritten
	seq   uint64 // the next frame to write
	// halfClosed: the client has shut down its write side.
	halfClosed bool
	// finAlone: the FIN reached the server with no data before it unread
	// (the half-close came once the server had read everything sent, or a
	// sample saw the FIN alone in its queue), so the read that passed it
	// returned the end of the stream to the application.
	finAlone bool
	// expect is the stream's frame being compared with what is read.
	expect    []byte
	expectSeq uint64
}

// held is what the server has read from the connection and not yet
// written back, as of the last sample, while its end is open (serverOpen;
// 0 otherwise): a byte echo owes what it was sent, so what the client has
// neither read back nor finds in a kernel queue is in the server, or was
// dropped by it. The subtraction cannot tell those apart: it is a
// candidate, which a case takes as holding only with positive evidence
// besides (the end still open, the bytes delivered later: confirmHeld,
// or I3's and W4's reading of the rest). The FIN's sequence number and a
// segment counted at both ends while in flight make it smaller; a segment
// moving between the two reads of a sample could make it larger, which
// connQueues.sample's order rules out while data flows one way (see
// there).
func (l *loaded) held() int64 {
	if !l.q.serverOpen() {
		return 0
	}
	return max(0, l.sent-l.read-l.q.kernel())
}

// sample refreshes the queues: the client's end first while the client
// sends, the server's first once the client has half-closed.
func (l *loaded) sample() error {
	q, err := l.socks.sample(l.halfClosed)
	if err != nil {
		return err
	}
	l.q = q
	return nil
}

// dialLoaded opens a loaded connection with tiny client buffers, or fails
// the case. It is closed when the case ends.
func (c *C) dialLoaded(name string, token uint64) *loaded {
	conn, err := dialSmall(c.Instance().Addr())
	if err != nil {
		c.Fatalf("%s: dial: %v", name, err)
	}
	c.Cleanup(func() { conn.Close() })
	socks, err := pinQueues(conn)
	if err != nil {
		c.Inconclusivef("%s: cannot see the connection's sockets, so cannot tell whether the server holds anything: %v", name, err)
	}
	return &loaded{name: name, conn: conn, socks: socks, token: token}
}

// writeSome writes at most n bytes of the stream, for at most d; it
// reports whether the write blocked (the server is not taking more).
func (l *loaded) writeSome(n int, d time.Duration) (blocked bool, err error) {
	buf := l.pend
	for len(buf) < n {
		p := make([]byte, streamFrameSize-wire.HeaderSize)
		fill(p, l.token, l.seq)
		buf = wire.AppendFrame(buf, wire.KindData, 0, l.token, l.seq, 0, p)
		l.seq++
	}
	l.conn.SetWriteDeadline(time.Now().Add(d))
	w, err := l.conn.Write(buf)
	l.sent += int64(w)
	l.pend = append(l.pend[:0], buf[w:]...)
	if isTimeout(err) {
		return true, nil
	}
	return false, err
}

// fillResult says what a fill established.
type fillResult struct {
	holding bool  // the server holds echoes it cannot write back
	paused  bool  // the server stopped reading the connection
	held    int64 // what it holds, bytes
	why     string
}

func (f fillResult) established() bool { return f.holding || f.paused }

// echoThreshold is what a server must hold to count as holding echoes:
// anything for a byte echo, more than a frame for a frame-echoing
// reference reactor (it rightly keeps a partial frame unanswered).
func (c *C) echoThreshold() int64 {
	if c.Reference() != nil {
		return streamFrameSize
	}
	return 0
}

// halfClose shuts down the client's write side (a FIN after what it
// sent). When the last sample saw the server with everything read, the
// FIN arrives alone (l.finAlone).
func (c *C) halfClose(l *loaded) {
	if err := l.conn.CloseWrite(); err != nil {
		c.Fatalf("%s: shutting down the write side: %v", l.name, err)
	}
	l.halfClosed = true
	l.finAlone = l.q.serverOpen() && l.q.serverUnread == 0 && l.q.clientUnsent == 0 && len(l.pend) == 0
}

// finRead reports, from the last sample, whether the server's application
// has read the client's FIN as the end of the stream: a read passed it
// (finPassed) when it was alone in the queue, or the server has closed
// its end. The FIN passed behind data is not yet seen: an application may
// stop after that read (EventMachine pauses a connection within its read
// loop) and learn of the end only from a later read.
func (l *loaded) finRead() bool {
	if l.q.finAlone() {
		l.finAlone = true
	}
	if !l.q.finPassed() {
		return false
	}
	return l.finAlone || !l.q.serverOpen()
}

// readEverything nudges, within bound, a server that has not read
// everything it was sent until it has (nothing unread at its end, nothing
// unsent at the client's, the client's last frame written whole), so that
// a FIN sent then arrives alone. It reports whether that was reached.
func (c *C) readEverything(l *loaded, bound time.Duration) bool {
	return c.nudge(l, bound, "before its half-close", func() (bool, bool) {
		if !l.q.serverOpen() {
			return true, false
		}
		return l.q.serverUnread == 0 && l.q.clientUnsent == 0 && len(l.pend) == 0, true
	})
}

// nudge samples l's queues until reached says it is done (and with what
// result), within bound (false then): while the server's unread queue
// moves it lets the server read; while it stands still (the server's
// output is full) the client reads 4 KiB, so the kernel's send buffer
// gains little room and what the server writes next stays in its own
// buffers. Before the half-close it also writes the rest of a frame a
// write left unwritten. when says when, for an error reading the echoes.
func (c *C) nudge(l *loaded, bound time.Duration, when string, reached func() (done, result bool)) bool {
	deadline := time.Now().Add(bound)
	last := int64(-1)
	for time.Now().Before(deadline) {
		if err := l.sample(); err != nil {
			c.Inconclusivef("socket queues: %v", err)
		}
		if done, result := reached(); done {
			return result
		}
		if len(l.pend) > 0 && !l.halfClosed {
			if _, err := l.writeSome(len(l.pend), 5*time.Millisecond); err != nil {
				return false
			}
		}
		if l.q.serverUnread != last {
			last = l.q.serverUnread
			time.Sleep(2 * time.Millisecond) // the server is reading: let it
			continue
		}
		if _, err := l.readSome(4<<10, 5*time.Millisecond); err != nil {
			c.Fatalf("%s: reading echoes %s: %v (%d of %d bytes back)", l.name, when, err, l.read, l.sent)
		}
	}
	return false
}

// holdSome is what a server that has not stopped reading must be seen
// holding for a fill to end (I3, W4), or for a fill that reached its
// limit to count as holding (I2, after confirmHeld): far more than a
// read buffer in flight, and more than the kernel's send buffer grows by
// while the client reads a few KiB.
const holdSome = 256 << 10

// fill sends the stream until the server has stopped reading the
// connection (the client's writes block, the server's unread queue does
// not move for 100 ms and its echoes back up), or (holdTarget > 0) holds holdTarget bytes
// of echoes it cannot deliver (twice seen, 30 ms apart, with the path back
// to the client backed up), or the client has sent past limit, or 15 s
// have passed. With needUnreadEmpty a holding counts only once the
// server has read everything sent, so that a server which has not paused
// reads a FIN sent next. The client reads nothing.
func (c *C) fill(l *loaded, limit, holdTarget int64, needUnreadEmpty bool) fillResult {
	const chunk = 16 * streamFrameSize
	began := time.Now()
	defer func() { c.Logf("%s: filled %d bytes in %v", l.name, l.sent, time.Since(began).Round(time.Millisecond)) }()
	deadline := time.Now().Add(15 * time.Second)
	lastUnread, still := int64(-1), time.Now() // the server's unread queue, and since when it has not moved
	for l.sent < limit {
		if time.Now().After(deadline) {
			// A slow server may hold much of what it took: the caller can
			// still confirm that by delivery (confirmHeld).
			return fillResult{held: l.held(), why: fmt.Sprintf("the server took %d bytes in 15 s without pausing, %d of them not in the kernel's queues (%v)", l.sent, l.held(), l.q)}
		}
		if c.Context().Err() != nil {
			c.Fatalf("%s: the case ended while filling", l.name)
		}
		blocked, err := l.writeSome(chunk, 5*time.Millisecond)
		if err != nil {
			// The server ended the connection (its own timeout, a limit)
			// before it was seen holding or paused: nothing the case
			// needs was established, and ending a connection is no claim
			// of this case.
			c.Inconclusivef("%s: the server ended the connection while it was being filled, after %d bytes (%v): it was not seen holding echoes or paused for it", l.name, l.sent, err)
		}
		if err := l.sample(); err != nil {
			c.Inconclusivef("cannot see the socket queues, so cannot tell whether the server holds anything: %v", err)
		}
		// Judged on a frame boundary only: a frame-echoing server holds a
		// partial frame unanswered, and that is no echo.
		if holdTarget > 0 && len(l.pend) == 0 && l.held() >= holdTarget && l.q.outputBlocked() && (!needUnreadEmpty || l.q.serverUnread == 0) {
			time.Sleep(30 * time.Millisecond) // a second look: a transient is no holding
			if err := l.sample(); err != nil {
				c.Inconclusivef("socket queues: %v", err)
			}
			if h := l.held(); h >= holdTarget && l.q.outputBlocked() {
				return fillResult{holding: true, held: h, why: fmt.Sprintf("after %d bytes sent the server holds %d bytes of echoes it cannot write (%v)", l.sent, h, l.q)}
			}
		}
		if l.q.serverUnread != lastUnread {
			lastUnread, still = l.q.serverUnread, time.Now()
		}
		// Writes that block while the server's receive queue stands
		// still: it has stopped reading.
		if blocked && lastUnread > 0 && l.q.outputBlocked() && time.Since(still) >= 100*time.Millisecond {
			return fillResult{paused: true, held: l.held(), why: fmt.Sprintf("after %d bytes sent the server stopped reading: %d bytes unread in its receive queue for %v, it holds %d (%v)", l.sent, lastUnread, time.Since(still).Round(time.Millisecond), l.held(), l.q)}
		}
	}
	return fillResult{held: l.held(), why: fmt.Sprintf("the server took all %d bytes (the limit) and holds %d with the path back %sbacked up (%v)", l.sent, l.held(), map[bool]string{true: "", false: "not "}[l.q.outputBlocked()], l.q)}
}

// confirmHeld establishes by delivery that the server holds at least want
// bytes of echoes in its own buffers: once the server has read everything
// it was sent (nothing unread at its end, nothing unsent at the client's,
// its end open), the client reads what the kernel holds on the way back
// and want bytes more, within bound. Those can only have come from the
// server's buffers; a server that dropped what the subtraction counted
// (held) has nothing to send, or sends the stream with a gap, which the
// check of every byte finds. It reports whether the bytes came, and what
// was seen.
func (c *C) confirmHeld(l *loaded, want int64, bound time.Duration) (bool, string) {
	deadline := time.Now().Add(bound)
	for {
		if err := l.sample(); err != nil {
			return false, fmt.Sprintf("socket queues: %v", err)
		}
		if !l.q.serverOpen() {
			return false, fmt.Sprintf("the server's end is no longer open (%v)", l.q)
		}
		if l.q.serverUnread == 0 && l.q.clientUnsent == 0 {
			break
		}
		if time.Now().After(deadline) {
			return false, fmt.Sprintf("the server did not read everything it was sent within %v (%v)", bound, l.q)
		}
		time.Sleep(10 * time.Millisecond) // the server is reading: a poll of another process's progress
	}
	from, candidate := l.read, l.held()
	target := l.read + l.q.clientUnread + l.q.serverUnsent + want
	for l.read < target {
		if time.Now().After(deadline) {
			return false, fmt.Sprintf("counted %d bytes held, but only %d of the %d bytes beyond the kernel's queues arrived within %v: it did not hold them", candidate, max(0, l.read-(target-want)), want, bound)
		}
		if _, err := l.readSome(int(min(target-l.read, 64<<10)), 50*time.Millisecond); err != nil {
			return false, fmt.Sprintf("counted %d bytes held, but reading them: %v", candidate, err)
		}
	}
	return true, fmt.Sprintf("counted %d bytes held; %d bytes read back, %d of them beyond what the kernel's queues held: the server held them", candidate, l.read-from, want)
}

// fillLimit is how much a fill may send: more than every kernel buffer on
// the way can hold, and 8 MiB on top for what a server may hold before it
// pushes back.
func (c *C) fillLimit() (int64, string) {
	capacity, why, err := kernelCapacity()
	if err != nil {
		c.Inconclusivef("cannot size the kernel's socket buffers: %v", err)
	}
	return capacity + 8<<20, fmt.Sprintf("fill limit %d bytes: %s, + 8 MiB", capacity+8<<20, why)
}

// readSome reads what is there (at most n bytes, waiting at most d) and
// checks it against the stream; io.EOF is returned at its end, a deadline
// passing is not an error.
func (l *loaded) readSome(n int, d time.Duration) (int, error) {
	buf := make([]byte, n)
	l.conn.SetReadDeadline(time.Now().Add(d))
	k, err := l.conn.Read(buf)
	if k > 0 {
		if why := l.check(buf[:k]); why != "" {
			return k, errors.New(why)
		}
	}
	if isTimeout(err) {
		err = nil
	}
	return k, err
}

// check compares b, the next bytes read, with the stream.
func (l *loaded) check(b []byte) string {
	for len(b) > 0 {
		off := int(l.read % streamFrameSize)
		if l.expect == nil || l.expectSeq != uint64(l.read/streamFrameSize) {
			l.expectSeq = uint64(l.read / streamFrameSize)
			p := make([]byte, streamFrameSize-wire.HeaderSize)
			fill(p, l.token, l.expectSeq)
			l.expect = wire.AppendFrame(l.expect[:0], wire.KindData, 0, l.token, l.expectSeq, 0, p)
		}
		n := min(len(b), streamFrameSize-off)
		if !bytes.Equal(b[:n], l.expect[off:off+n]) {
			i := firstDiff(b[:n], l.expect[off:off+n])
			return fmt.Sprintf("byte %d of the echo differs from what was sent (frame seq %d): corrupted, reordered or from another connection", l.read+int64(i), l.expectSeq)
		}
		l.read += int64(n)
		b = b[n:]
	}
	return ""
}

// nudgeToFIN, once the client has shut down its write side, waits (nudge)
// for the server to read the FIN while keeping its echoes backed up. It
// returns whether the server read the FIN within bound, and what it held
// when that was first seen (an under-estimate: after the FIN it can only
// write, so it held at least that when it read it).
func (c *C) nudgeToFIN(l *loaded, bound time.Duration) (finRead bool, heldAtFIN int64) {
	finRead = c.nudge(l, bound, "after its half-close", func() (bool, bool) { return l.finRead(), true })
	return finRead, l.held()
}

// finAttempts is how many loaded connections halfCloseHolding tries, one
// after another, for a server seen reading a FIN while holding nothing.
const finAttempts = 3

// halfCloseHolding establishes the precondition of the cases about a
// half-closed client whose echoes the server still holds (I3, W4): it
// opens a loaded connection (token), fills it, to at most limit, until
// nothing is left unread (so that a server which has not paused reads
// the FIN next), shuts down its write side and nudges the server to the
// FIN. A server
// that paused reads the FIN only after it has resumed, and what it holds
// then depends on how much its kernel send buffer, which autotuning
// sizes, takes at the moment it resumes: a draw the client cannot steer.
// So while the server read the FIN holding nothing, it tries again on a
// new connection, at most finAttempts in all, handing each connection
// given up on to settle first. It does not try again when the fill
// established neither holding nor a pause, or the FIN was not read within
// 10 s: that is the server's design, and the same every run. Each
// attempt's evidence is recorded. It returns the last connection, whether
// its FIN was read and what the server held then.
func (c *C) halfCloseHolding(limit int64, token uint64, settle func(*loaded)) (l *loaded, finRead bool, held int64) {
	for attempt := 1; ; attempt++ {
		name := "half-closed conn"
		if attempt > 1 {
			name = fmt.Sprintf("half-closed conn %d", attempt)
		}
		l = c.dialLoaded(name, token+uint64(attempt-1))
		f := c.fill(l, limit, holdSome, true)
		c.Evidencef("%s: before the half-close: %s", name, f.why)
		if !c.readEverything(l, 5*time.Second) {
			c.Evidencef("%s: the server had not read everything sent within 5 s (%v): its FIN is seen read only once seen alone in its queue", name, l.q)
		}
		c.halfClose(l)
		finRead, held = c.nudgeToFIN(l, 10*time.Second)
		c.Evidencef("%s: the server read the FIN: %v, holding at least %d bytes then (%d of %d bytes back; %v)", name, finRead, held, l.read, l.sent, l.q)
		if held > c.echoThreshold() || !finRead || !f.established() || attempt == finAttempts {
			return l, finRead, held
		}
		settle(l)
	}
}

// readOwed reads, within bound, every byte of the echo owed (all that
// was sent, for a byte echo; the complete frames, for a frame echo), each
// checked; what comes after, an EOF included, is not its business.
func (l *loaded) readOwed(bound time.Duration, frameEcho bool) error {
	owed := l.sent
	if frameEcho {
		owed -= l.sent % streamFrameSize
	}
	deadline := time.Now().Add(bound)
	for l.read < owed {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d bytes owed back after %v, then nothing", l.read, owed, bound)
		}
		if _, err := l.readSome(int(min(owed-l.read, 256<<10)), time.Until(deadline)); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("the server closed the connection after %d of %d bytes owed: it dropped %d bytes of echoes", l.read, owed, owed-l.read)
			}
			return fmt.Errorf("after %d of %d bytes owed: %w", l.read, owed, err)
		}
	}
	return nil
}

// readRest reads the echo to its end within bound and reports how it
// ended: io.EOF after every byte owed is the one right ending. A byte echo
// owes every byte sent; a frame echo (a reference reactor) owes the
// complete frames, and rightly drops a partial last frame at EOF (the
// client's last write may have been cut short by its deadline).
func (l *loaded) readRest(bound time.Duration, frameEcho bool) error {
	owed := l.sent
	if frameEcho {
		owed -= l.sent % streamFrameSize
	}
	deadline := time.Now().Add(bound)
	for {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d bytes owed back after %v, then nothing", l.read, owed, bound)
		}
		_, err := l.readSome(256<<10, time.Until(deadline))
		if errors.Is(err, io.EOF) {
			if l.read < owed {
				return fmt.Errorf("the server closed the connection after %d of %d bytes owed: it dropped %d bytes of echoes", l.read, owed, owed-l.read)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("after %d of %d bytes owed: %w", l.read, owed, err)
		}
		if l.read > owed {
			return fmt.Errorf("%d bytes back, %d owed", l.read, owed)
		}
	}
}
