package cases

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
)

// halfClose shuts down the client's write side (a FIN after what it
// sent). When the last sample saw the server with everything read, the
// FIN arrives alone (l.finAlone).
func halfClose(c *conformance.C, l *loaded) {
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
func readEverything(c *conformance.C, l *loaded, bound time.Duration) bool {
	return nudge(c, l, bound, "before its half-close", func() (bool, bool) {
		if !l.q.serverOpen() {
			return true, false
		}
		return l.q.serverUnread == 0 && l.q.clientUnsent == 0 && len(l.pend) == 0, true
	})
}

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
var halfCloseStimulus = fmt.Sprintf("the client (%d KiB receive buffer) fills as in I2 until the server stops reading or holds %d KiB of echoes with nothing of it left unread, shuts down its write side, and reads (%d KiB at a time, only while the server does not) until the server reads the FIN (within %v); a server that read the FIN holding nothing after it paused or held is tried again on a new connection, %d connections at most",
	smallClientBuf>>10, holdSome>>10, nudgePiece>>10, finBound, finAttempts)

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
// finBound: that is the server's design, and the same every run. Each
// attempt's evidence is recorded. It returns the last connection, whether
// its FIN was read and what the server held then.
func halfCloseHolding(c *conformance.C, limit int64, token uint64, settle func(*loaded)) (l *loaded, finRead bool, held int64) {
	for attempt := 1; ; attempt++ {
		name := "half-closed conn"
		if attempt > 1 {
			name = fmt.Sprintf("half-closed conn %d", attempt)
		}
		l = dialLoaded(c, name, token+uint64(attempt-1))
		f := fillLoaded(c, l, limit, holdSome, true)
		c.Evidencef("%s: before the half-close: %s", name, f.why)
		if !readEverything(c, l, readAllBound) {
			c.Evidencef("%s: the server had not read everything sent within %v (%v): its FIN is seen read only once seen alone in its queue", name, readAllBound, l.q)
		}
		halfClose(c, l)
		finRead, held = nudgeToFIN(c, l, finBound)
		c.Evidencef("%s: the server read the FIN: %v, holding at least %d bytes then (%d of %d bytes back; %v)", name, finRead, held, l.read, l.sent, l.q)
		if held > echoThreshold(c) || !finRead || !f.established() || attempt == finAttempts {
			return l, finRead, held
		}
		settle(l)
	}
}
