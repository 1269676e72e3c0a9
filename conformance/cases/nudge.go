package cases

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
)

// halfClose shuts down the client's write side (a FIN after what it
// sent). When the last sample saw the server with everything read, the
// FIN arrives alone (l.finAlone). A connection the kernel no longer has
// connected (ENOTCONN: the server reset or closed it first) was never
// half-closed: what the half-close cases claim was not tested, and the
// reset is the claim of the cases about the stream (R1, F2), not theirs.
func halfClose(c *conformance.C, l *loaded) {
	if err := l.conn.CloseWrite(); errors.Is(err, syscall.ENOTCONN) {
		c.Inconclusivef("%s: the server ended the connection before the client's half-close (shutdown: %v; %d of %d bytes back): the half-close was never tested", l.name, err, l.read, l.sent)
	} else if err != nil {
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
func readEverything(c *conformance.C, l *loaded, bound time.Duration) bool {
	return nudge(c, l, bound, "before its half-close", func() (bool, bool) {
		if !l.q.serverOpen() {
			return true, false
		}
		return l.q.serverUnread == 0 && l.q.clientUnsent == 0 && len(l.pend) == 0, true
	})
}

// topUpToHolding, once the server has read everything sent
// (readEverything), sends the stream on a frame at a time, reading
// nothing, while the server reads every frame and holds nothing (it
// handed its echoes to the kernel, whose send buffer had room), until it
// is seen holding echoes with nothing left unread, within bound and
// topUpMost bytes. It returns what it sent and whether that was reached.
// A server that writes everything it read before it reads again holds
// echoes only while its write is blocked; filling the room left in its
// send buffer blocks it, and a FIN sent then reaches a server holding
// echoes, whatever its design.
func topUpToHolding(c *conformance.C, l *loaded, bound time.Duration) (extra int64, holding bool) {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) && extra < topUpMost {
		if err := l.sample(); err != nil {
			c.Inconclusivef("socket queues: %v", err)
		}
		if !l.q.serverOpen() {
			return extra, false
		}
		if l.q.serverUnread == 0 && l.q.clientUnsent == 0 && len(l.pend) == 0 {
			if l.held() > echoThreshold(c) && stillHolding(c, l) {
				return extra, true
			}
			sent := l.sent
			if _, err := l.writeSome(streamFrameSize, 5*time.Millisecond); err != nil {
				return extra, false
			}
			extra += l.sent - sent
		} else if len(l.pend) > 0 {
			sent := l.sent
			if _, err := l.writeSome(len(l.pend), 5*time.Millisecond); err != nil {
				return extra, false
			}
			extra += l.sent - sent
		}
		time.Sleep(time.Millisecond) // the server reads what was sent
	}
	return extra, false
}

// stillHolding samples l again after holdSettle and reports whether the
// server still holds echoes with nothing unread: a server caught between
// reading a frame and writing it holds it for microseconds, one blocked in
// its write holds it until the client reads, which it does not here.
func stillHolding(c *conformance.C, l *loaded) bool {
	time.Sleep(holdSettle)
	if err := l.sample(); err != nil {
		c.Inconclusivef("socket queues: %v", err)
	}
	return l.q.serverOpen() && l.q.serverUnread == 0 && l.held() > echoThreshold(c)
}

// holdSettle is how long topUpToHolding waits to see holding again: far
// longer than a server takes from a read to the write after it.
const holdSettle = 5 * time.Millisecond

// topUpMost bounds what topUpToHolding sends: more than a server's send
// buffer holds at the largest size autotuning gives it (tcp_wmem's third
// field, 4 MiB by default).
const topUpMost = 8 << 20

// nudge samples l's queues until reached says it is done (and with what
// result), within bound (false then): while the server's unread queue
// moves it lets the server read; while it stands still (the server's
// output is full) the client reads nudgePiece, so the kernel's send buffer
// gains little room and what the server writes next stays in its own
// buffers. Before the half-close it also writes the rest of a frame a
// write left unwritten. when says when, for an error reading the echoes.
func nudge(c *conformance.C, l *loaded, bound time.Duration, when string, reached func() (done, result bool)) bool {
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
		if _, err := l.readSome(nudgePiece, 5*time.Millisecond); err != nil {
			c.Fatalf("%s: reading echoes %s: %v (%d of %d bytes back)", l.name, when, err, l.read, l.sent)
		}
	}
	return false
}

// nudgeToFIN, once the client has shut down its write side, waits (nudge)
// for the server to read the FIN while keeping its echoes backed up. It
// returns whether the server read the FIN within bound, and what it held
// when that was first seen (an under-estimate: after the FIN it can only
// write, so it held at least that when it read it).
func nudgeToFIN(c *conformance.C, l *loaded, bound time.Duration) (finRead bool, heldAtFIN int64) {
	finRead = nudge(c, l, bound, "after its half-close", func() (bool, bool) { return l.finRead(), true })
	return finRead, l.held()
}

// finAttempts is how many loaded connections halfCloseHolding tries, one
// after another, for a server seen reading a FIN while holding nothing;
// each is given readAllBound to read everything before its half-close,
// and finBound to read its FIN after it. nudgePiece is what the client
// reads at a time while the server does not.
const (
	finAttempts  = 3
	readAllBound = 5 * time.Second
	finBound     = 10 * time.Second
	nudgePiece   = 4 << 10
)

// halfCloseStimulus is halfCloseHolding in words, from its constants, as
// I3's and W4's bounds state it.
var halfCloseStimulus = fmt.Sprintf("the client (%d KiB receive buffer) fills as in I2 until the server stops reading or holds %d KiB of echoes with nothing of it left unread; once the server has read everything, it sends on a frame at a time, reading nothing, until the server is seen holding echoes with nothing unread twice %v apart (within %v and %d MiB), so that a server whose write blocks holds echoes when the FIN comes; it shuts down its write side, and reads (%d KiB at a time, only while the server does not) until the server reads the FIN (within %v); a server that read the FIN holding nothing after it paused or held is tried again on a new connection, %d connections at most",
	smallClientBuf>>10, holdSome>>10, holdSettle, readAllBound, topUpMost>>20, nudgePiece>>10, finBound, finAttempts)

// halfCloseHolding establishes the precondition of the cases about a
// half-closed client whose echoes the server still holds (I3, W4): it
// opens a loaded connection (token), fills it, to at most limit, until
// nothing is left unread (so that a server which has not paused reads
// the FIN next), shuts down its write side and nudges the server to the
// FIN. A server that paused reads the FIN only after it has resumed, and
// what it holds then depends on how much its kernel send buffer, which
// autotuning sizes, takes at the moment it resumes: a draw the client
// cannot steer. So while the server read the FIN holding nothing, it
// tries again on a new connection, at most finAttempts in all, handing
// each connection given up on to settle, which reads every echo owed and
// reports whether all of it arrived. It does not try again when the fill
// established neither holding nor a pause, or the FIN was not read within
// finBound: that is the server's design, and the same every run. Each
// attempt's evidence is recorded.
func halfCloseHolding(c *conformance.C, limit int64, token uint64, settle func(*loaded) (delivered bool)) halfClosed {
	var h halfClosed
	for attempt := 1; ; attempt++ {
		name := "half-closed conn"
		if attempt > 1 {
			name = fmt.Sprintf("half-closed conn %d", attempt)
		}
		l := dialLoaded(c, name, token+uint64(attempt-1))
		f := fillLoaded(c, l, limit, holdSome, true)
		c.Evidencef("%s: before the half-close: %s", name, f.why)
		if !readEverything(c, l, readAllBound) {
			c.Evidencef("%s: the server had not read everything sent within %v (%v): its FIN is seen read only once seen alone in its queue", name, readAllBound, l.q)
		} else if extra, holding := topUpToHolding(c, l, readAllBound); !holding {
			c.Evidencef("%s: the server had read everything sent but was not seen holding echoes (%d bytes more sent, a frame at a time, within %v; %v): its FIN comes to a server holding nothing", name, extra, readAllBound, l.q)
		}
		halfClose(c, l)
		finRead, held := nudgeToFIN(c, l, finBound)
		c.Evidencef("%s: the server read the FIN: %v, holding at least %d bytes then (%d of %d bytes back; %v); while the FIN waited alone in its queue it held at most %d bytes", name, finRead, held, l.read, l.sent, l.q, l.finWaitHeld)
		h = halfClosed{l: l, finRead: finRead, held: held, attempts: attempt, flushedFirst: h.flushedFirst}
		if held > echoThreshold(c) || !finRead || !f.established() || attempt == finAttempts {
			return h
		}
		if settle(l) && h.flushedBeforeFIN(c) {
			h.flushedFirst++
		}
	}
}

// halfClosed is what halfCloseHolding established: its last connection
// (l), whether the server read that connection's FIN and what it held
// then, how many connections it tried, and in how many of those it gave
// up on the server was seen flushing before it read the FIN.
type halfClosed struct {
	l        *loaded
	finRead  bool
	held     int64
	attempts int
	// flushedFirst counts the connections given up on whose FIN the
	// server read only once it held nothing, though it had held echoes
	// while the FIN waited alone in its queue, and which then got every
	// echo owed (flushedBeforeFIN, settle).
	flushedFirst int
}

// flushedBeforeFIN reports whether the server, on h's last connection,
// held echoes while the FIN waited alone, unread, in its queue, and read
// the FIN holding none: it let the end of the stream wait until it had
// handed the kernel everything it had read. With the echoes then all
// delivered (not dropped at the FIN), that is a server that writes
// everything before it reads again.
func (h halfClosed) flushedBeforeFIN(c *conformance.C) bool {
	return h.finRead && h.held <= echoThreshold(c) && h.l.finWaitHeld > echoThreshold(c)
}

// neverHoldsAtFIN reports whether every connection halfCloseHolding tried
// (finAttempts of them) showed the server flushing before it read the FIN
// (flushedBeforeFIN) and, the last one too, delivering every echo owed
// (lastDelivered, the case's own reading of it): two signals, on each
// connection, of a design that never holds echoes when it reads the end
// of the stream. The precondition of I3 and W4 then never arises on the
// server, whatever the run's timing.
func (h halfClosed) neverHoldsAtFIN(c *conformance.C, lastDelivered bool) bool {
	return h.attempts == finAttempts && h.flushedFirst == finAttempts-1 && h.flushedBeforeFIN(c) && lastDelivered
}

// neverHoldsAtFINReason is the reason of an inconclusive that
// neverHoldsAtFIN explains.
func (h halfClosed) neverHoldsAtFINReason() string {
	return fmt.Sprintf("on each of %d connections the server held echoes while the client's FIN waited alone in its queue, read the FIN only once it held none, and then delivered every echo owed: it behaves as a server that writes everything it has read before it reads again, which never holds echoes when it reads the end of the stream, so the precondition does not arise on its design (for such a server, the same every run)", h.attempts)
}
