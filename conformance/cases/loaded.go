package cases

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
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
	// finWaitHeld is the most the server was seen holding (held) while
	// the FIN waited alone, unread, in its queue (sockQueues.finAlone):
	// echoes it had and did not read the end of the stream past.
	finWaitHeld int64
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
	if l.halfClosed && q.finAlone() {
		l.finWaitHeld = max(l.finWaitHeld, l.held())
	}
	return nil
}

// dialLoaded opens a loaded connection with tiny client buffers, or fails
// the case. It is closed when the case ends.
func dialLoaded(c *conformance.C, name string, token uint64) *loaded {
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
func echoThreshold(c *conformance.C) int64 {
	if c.Reference() != nil {
		return streamFrameSize
	}
	return 0
}

// A fill (fillLoaded) takes at most fillFor; a server whose receive queue
// stands still for fillStill while the client's writes block has stopped
// reading; fillLimit lets a fill send fillHeadroom beyond what the
// kernel's buffers hold.
const (
	fillFor      = 15 * time.Second
	fillStill    = 100 * time.Millisecond
	fillHeadroom = 8 << 20
)

// holdSome is what a server that has not stopped reading must be seen
// holding for a fill to end (I3, W4), or for a fill that reached its
// limit to count as holding (I2, after confirmHeld): far more than a
// read buffer in flight, and more than the kernel's send buffer grows by
// while the client reads a few KiB.
const holdSome = 256 << 10

// fillLoaded sends the stream until the server has stopped reading the
// connection (the client's writes block, the server's unread queue does
// not move for fillStill and its echoes back up), or (holdTarget > 0) holds holdTarget bytes
// of echoes it cannot deliver (twice seen, 30 ms apart, with the path back
// to the client backed up), or the client has sent past limit, or fillFor
// have passed. With needUnreadEmpty a holding counts only once the
// server has read everything sent, so that a server which has not paused
// reads a FIN sent next. The client reads nothing.
func fillLoaded(c *conformance.C, l *loaded, limit, holdTarget int64, needUnreadEmpty bool) fillResult {
	const chunk = 16 * streamFrameSize
	began := time.Now()
	defer func() { c.Logf("%s: filled %d bytes in %v", l.name, l.sent, time.Since(began).Round(time.Millisecond)) }()
	deadline := time.Now().Add(fillFor)
	lastUnread, still := int64(-1), time.Now() // the server's unread queue, and since when it has not moved
	for l.sent < limit {
		if time.Now().After(deadline) {
			// A slow server may hold much of what it took: the caller can
			// still confirm that by delivery (confirmHeld).
			return fillResult{held: l.held(), why: fmt.Sprintf("the server took %d bytes in %v without pausing, %d of them not in the kernel's queues (%v)", l.sent, fillFor, l.held(), l.q)}
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
		if blocked && lastUnread > 0 && l.q.outputBlocked() && time.Since(still) >= fillStill {
			return fillResult{paused: true, held: l.held(), why: fmt.Sprintf("after %d bytes sent the server stopped reading: %d bytes unread in its receive queue for %v, it holds %d (%v)", l.sent, lastUnread, time.Since(still).Round(time.Millisecond), l.held(), l.q)}
		}
	}
	return fillResult{held: l.held(), why: fmt.Sprintf("the server took all %d bytes (the limit) and holds %d with the path back %sbacked up (%v)", l.sent, l.held(), map[bool]string{true: "", false: "not "}[l.q.outputBlocked()], l.q)}
}

// fillLimit is how much a fill may send: more than every kernel buffer on
// the way can hold, and fillHeadroom on top for what a server may hold before it
// pushes back.
func fillLimit(c *conformance.C) (int64, string) {
	capacity, why, err := kernelCapacity()
	if err != nil {
		c.Inconclusivef("cannot size the kernel's socket buffers: %v", err)
	}
	return capacity + fillHeadroom, fmt.Sprintf("fill limit %d bytes: %s, + %d MiB", capacity+fillHeadroom, why, fillHeadroom>>20)
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
