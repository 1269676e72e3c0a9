package cases

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/wire"
)

// The stop-contract cases (X3, X4, X5) share one stimulus: termConns
// connections that pipeline frames through the target's SIGTERM, each at
// most termWindow bytes ahead of its echoes, with small client buffers
// (dialSmall) so that echoes back up into the server and it holds some
// when the signal comes. Every connection's bytes are a function of its
// offset (frames of termFrame bytes, seq counting up, no send time), so
// an echo is checked byte for byte without keeping what was sent.
const (
	termConns  = 2
	termFrame  = 1024
	termWindow = 1 << 20
	// termFlow is what each connection must have had echoed before the
	// signal: the server is serving it.
	termFlow = 256 << 10
	// termMargin is what the client allows itself, past the grace period,
	// to see a connection end on a loaded machine.
	termMargin = time.Second
	// termPause is how long the clients stop reading just before the
	// signal: long enough for the server's reads to stop against the
	// window and its writes against the full socket buffers (a few ms on
	// loopback), so that it holds echoes and is measured at rest.
	termPause = 100 * time.Millisecond
	// finProbeWait is how long a stream that read the server's FIN waits,
	// after writing finProbe more bytes, for an RST: a server that closed
	// without reading to the client's EOF resets them (on loopback or a
	// veth, within microseconds of their arrival); one that reads and
	// discards until the client's EOF, as a graceful close does, never
	// does. A server that closes later than this after its FIN is not
	// caught.
	finProbeWait = 50 * time.Millisecond
	finProbe     = termFrame
)

// termStimulus is that stimulus in words, from its constants, as X3's and X4's claims state
// it. The cases of the SIGTERM stop contract are opt-in (Options.Stop),
// for any process target, black box or reference.
var termStimulus = fmt.Sprintf("%d connections pipeline %d KiB frames through the signal (at most %d MiB ahead of their echoes, %d KiB client receive buffers; for %v before the signal the clients do not read, so echoes back up into the server), stop writing when they read the end, then half-close",
	termConns, termFrame>>10, termWindow>>20, smallClientBuf>>10, termPause)

// streamEnd is how a connection's echo stream ended.
type streamEnd string

const (
	endOpen     streamEnd = "still open"
	endEOF      streamEnd = "FIN (EOF)"
	endReset    streamEnd = "RST (connection reset)"
	endMismatch streamEnd = "bytes that were not sent"
	endError    streamEnd = "a read error"
)

// streamFrame is frame seq of the stream with token: DATA, a checkable
// payload, no send time, so that it is the same bytes every time.
func streamFrame(token, seq uint64) []byte {
	p := make([]byte, termFrame-wire.HeaderSize)
	fill(p, token, seq)
	return wire.AppendFrame(nil, wire.KindData, 0, token, seq, 0, p)
}

// termStream is one pipelining connection: a writer that keeps sending
// frames until the reader has seen the stream end, and a reader that
// checks every byte against what was sent at its offset.
type termStream struct {
	name     string
	token    uint64
	conn     *net.TCPConn
	socks    *connQueues // conn's two ends in the kernel's tables; nil if they could not be found
	sent     atomic.Int64
	echoed   atomic.Int64
	progress chan struct{} // a non-blocking tick from the reader
	stopOnce sync.Once
	stopping chan struct{} // closed: the writer stops
	wrote    chan struct{} // closed when the writer has returned
	ended    chan struct{} // closed when the reader has returned
	// holdOpen: after the end, the client keeps its side open (no FIN)
	// until release; otherwise it half-closes once the writer stops.
	holdOpen bool
	// pausing makes the reader wait, before its next read, until resume
	// is closed (resumeOnce).
	pausing    atomic.Bool
	resume     chan struct{}
	resumeOnce sync.Once

	// Set by the writer before wrote closes.
	writeErr error
	// Set by the reader before ended closes.
	end      streamEnd
	endAt    time.Time
	endErr   error
	mismatch string
}

// dialStream opens a stream to addr and starts its writer and reader;
// the case's cleanup closes it.
func dialStream(c *conformance.C, name string, token uint64, addr string, holdOpen bool) *termStream {
	conn, err := dialSmall(addr)
	if err != nil {
		c.Fatalf("%s: dial %s: %v", name, addr, err)
	}
	// Without the sockets pinned, serverRead says it cannot tell.
	socks, _ := pinQueues(conn)
	s := &termStream{name: name, token: token, conn: conn, socks: socks, holdOpen: holdOpen, progress: make(chan struct{}, 1),
		stopping: make(chan struct{}), wrote: make(chan struct{}), ended: make(chan struct{}), resume: make(chan struct{})}
	go s.write()
	go s.read()
	c.Cleanup(func() {
		s.resumeReading()
		s.stopWriting()
		conn.Close() // ends a read still waiting
		<-s.wrote
		<-s.ended
	})
	return s
}

func (s *termStream) stopWriting() { s.stopOnce.Do(func() { close(s.stopping) }) }

func (s *termStream) resumeReading() { s.resumeOnce.Do(func() { close(s.resume) }) }

// write sends frames, 16 to a write, while fewer than termWindow bytes
// are unanswered, until stopped or a write fails (a server that has
// closed answers writes with RST: the client then stops).
func (s *termStream) write() {
	defer close(s.wrote)
	var pending []byte
	seq := uint64(0)
	for {
		select {
		case <-s.stopping:
			return
		default:
		}
		if len(pending) == 0 {
			if s.sent.Load()-s.echoed.Load() >= termWindow {
				select {
				case <-s.progress:
				case <-s.stopping:
					return
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			for range 16 {
				pending = append(pending, streamFrame(s.token, seq)...)
				seq++
			}
		}
		s.conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		n, err := s.conn.Write(pending)
		s.sent.Add(int64(n))
		pending = pending[n:]
		if err != nil && !isTimeout(err) {
			s.writeErr = err
			return
		}
	}
}

// read checks every byte that comes back against the stream at its
// offset until the stream ends (EOF, reset, bytes not sent, the read
// deadline), then stops the writer and, unless holdOpen, half-closes.
func (s *termStream) read() {
	defer close(s.ended)
	buf := make([]byte, 64<<10)
	var off int64
	var frame []byte // the frame at off / termFrame
	for {
		if s.pausing.Load() {
			<-s.resume
		}
		n, err := s.conn.Read(buf)
		for b := buf[:n]; len(b) > 0 && s.mismatch == ""; {
			idx, at := uint64(off/termFrame), int(off%termFrame)
			if at == 0 || frame == nil {
				frame = streamFrame(s.token, idx)
			}
			k := min(len(b), termFrame-at)
			if !bytes.Equal(b[:k], frame[at:at+k]) {
				i := firstDiff(b[:k], frame[at:at+k])
				s.mismatch = fmt.Sprintf("byte %d (frame %d, byte %d of it) is %#02x, sent %#02x", off+int64(i), idx, at+i, b[i], frame[at+i])
				break
			}
			b, off = b[k:], off+int64(k)
			if off%termFrame == 0 {
				frame = nil
			}
		}
		s.echoed.Store(off)
		select {
		case s.progress <- struct{}{}:
		default:
		}
		if s.mismatch != "" {
			s.finish(endMismatch, nil)
			return
		}
		if err != nil {
			s.finish(classifyEnd(err))
			return
		}
	}
}

// finish records how the stream ended, stops the writer and, at an EOF
// and unless holdOpen, half-closes once the writer has stopped: the
// server then reads the client's FIN.
//
// A read sees EOF after an RST too when a write took the reset's error
// first (the kernel reports it once); a write that failed with
// ECONNRESET means an RST came before any FIN (after a FIN, a reset is
// EPIPE), so the stream ended in RST whatever the read saw. After a FIN
// the stream writes a little more and waits for an RST (resetAfterFIN):
// a server whose close resets the client's later bytes would destroy, on
// the way, echoes the client had not read yet.
func (s *termStream) finish(end streamEnd, err error) {
	s.endAt = time.Now()
	s.stopWriting()
	<-s.wrote
	if end == endEOF && errors.Is(s.writeErr, syscall.ECONNRESET) {
		end, err = endReset, fmt.Errorf("EOF read, but a write had failed with %w", s.writeErr)
	}
	if end == endEOF && !s.holdOpen {
		if reset := s.resetAfterFIN(); reset != nil {
			end, err = endReset, reset
		}
	}
	s.end, s.endErr = end, err
	if end == endEOF && !s.holdOpen {
		s.conn.CloseWrite()
	}
}

// resetAfterFIN writes finProbe bytes every 5 ms after the server's FIN,
// for finProbeWait, and reports the RST they meet, or nil. (A read after
// the FIN returns EOF at once, so the writes are the probe: once an RST
// has come, a write fails with EPIPE, the kernel's error for a reset
// after a FIN, or ECONNRESET.)
func (s *termStream) resetAfterFIN() error {
	probe := make([]byte, finProbe)
	for end := time.Now().Add(finProbeWait); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		s.conn.SetWriteDeadline(time.Now().Add(finProbeWait))
		_, err := s.conn.Write(probe)
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			return fmt.Errorf("FIN, then RST: a write after the FIN failed with %w (the server closed without reading to the client's EOF, so its kernel reset the client's later bytes; echoes the client had not read yet would be lost with them)", err)
		}
		if err != nil {
			return nil // a write that timed out: the server is not reading, but it has not reset either
		}
	}
	return nil
}

// classifyEnd says what a read error means for the stream.
func classifyEnd(err error) (streamEnd, error) {
	switch {
	case errors.Is(err, io.EOF):
		return endEOF, nil
	case errors.Is(err, syscall.ECONNRESET):
		return endReset, err
	case isTimeout(err):
		return endOpen, nil
	}
	return endError, err
}

// termLoad is a stop-contract case's connections, driven through one
// SIGTERM of the instance.
type termLoad struct {
	c        *conformance.C
	term     conformance.Terminable
	streams  []*termStream
	read0    []int64 // per stream: what the server had read before the signal, at least (-1: not measured)
	held0    []int64 // per stream: what it held then, of that
	signalAt time.Time
	endBy    time.Time // the signal + x4EndLimit
	// endArithmetic is how endBy's distance from the signal was reached
	// (x4EndLimit's arithmetic).
	endArithmetic string
}

// startTermLoad dials termConns streams (holdOpen as dialStream), waits
// until each has had termFlow bytes echoed (or fails the case), reads
// what the server has read so far and sends the instance SIGTERM.
func startTermLoad(c *conformance.C, holdOpen bool) *termLoad {
	term, ok := c.Instance().(conformance.Terminable)
	if !ok { // unmet catches this first
		c.Skipf("needs a process to send SIGTERM to")
	}
	l := &termLoad{c: c, term: term}
	for i := range termConns {
		l.streams = append(l.streams, dialStream(c, fmt.Sprintf("conn %d", i+1), uint64(7000+i), c.Instance().Addr(), holdOpen))
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, s := range l.streams {
		for s.echoed.Load() < termFlow {
			select {
			case <-s.ended:
				c.Fatalf("%s ended before the signal, with %s after %d of %d bytes sent: %v %s", s.name, s.end, s.echoed.Load(), s.sent.Load(), s.endErr, s.mismatch)
			case <-time.After(time.Millisecond):
			}
			if time.Now().After(deadline) {
				c.Fatalf("%s: %d of %d bytes sent echoed in 5 s: the server is not serving it", s.name, s.echoed.Load(), s.sent.Load())
			}
		}
	}
	// A slow consumer at the moment of the signal: echoes back up into
	// the server, and what it has read holds still while it is measured.
	for _, s := range l.streams {
		s.pausing.Store(true)
	}
	pause := time.NewTimer(termPause)
	<-pause.C
	for _, s := range l.streams {
		read, held := serverRead(s)
		l.read0, l.held0 = append(l.read0, read), append(l.held0, held)
	}
	l.signalAt = time.Now()
	err := term.Terminate()
	for _, s := range l.streams {
		s.resumeReading()
	}
	if err != nil {
		c.Fatalf("sending SIGTERM: %v", err)
	}
	end, endArithmetic := x4EndLimit(c.StopGrace())
	l.endBy, l.endArithmetic = l.signalAt.Add(end), endArithmetic
	for _, s := range l.streams {
		s.conn.SetReadDeadline(l.endBy)
	}
	return l
}

// serverRead is, from both ends' kernel queues, at least how much of s the
// server has read (sent, less what the client's kernel has not had
// acknowledged and what waits in the server's receive queue), and of that
// how much it holds (not yet written back: less what was echoed and what
// both kernels hold on the way back); -1, -1 if the queues cannot be read.
// The client's queues are read first, so a segment moving meanwhile makes
// the figures low, never high (startTermLoad measures at rest).
func serverRead(s *termStream) (read, held int64) {
	sent, echoed := s.sent.Load(), s.echoed.Load()
	if s.socks == nil {
		return -1, -1
	}
	q, err := s.socks.sample(false)
	if err != nil || q.serverGone {
		return -1, -1
	}
	read = sent - q.clientUnsent - q.serverUnread
	return read, max(read-echoed-q.clientUnread-q.serverUnsent, 0)
}

// awaitEnds waits until every stream has ended or the end of the grace
// period (endBy) has passed, and records how each ended. A process that
// is gone has no connections: the kernel ends them (FIN, or RST where
// data was left unread), so a stream still open at endBy is one the
// server kept open.
func (l *termLoad) awaitEnds() {
	for _, s := range l.streams {
		<-s.ended // its read deadline is endBy
	}
	for _, s := range l.streams {
		l.c.Evidencef("%s: %d bytes sent, %d echoed, then %s %v after SIGTERM%s", s.name, s.sent.Load(), s.echoed.Load(), s.end,
			s.endAt.Sub(l.signalAt).Round(time.Millisecond), errSuffix(s.endErr, s.writeErr))
	}
}

// errSuffix is the errors worth showing with a stream's end.
func errSuffix(readErr, writeErr error) string {
	out := ""
	if readErr != nil {
		out += fmt.Sprintf(" (read: %v)", readErr)
	}
	if writeErr != nil {
		out += fmt.Sprintf(" (the client's writes ended with: %v)", writeErr)
	}
	return out
}
