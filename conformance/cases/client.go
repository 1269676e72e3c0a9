package cases

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/wire"
)

// got is one frame a peer received.
type got struct {
	h       wire.Header
	payload []byte
	at      time.Time
}

func (g got) String() string {
	if g.h.Kind == wire.KindReject || g.h.Kind == wire.KindStopAck {
		return fmt.Sprintf("%v token %d seq %d %q", g.h.Kind, g.h.Token, g.h.Seq, g.payload)
	}
	return fmt.Sprintf("%v token %d seq %d len %d", g.h.Kind, g.h.Token, g.h.Seq, len(g.payload))
}

// clientMaxFrame is the largest frame a client accepts from a server: more
// than any frame a case sends (at most 1 MiB), so a server's corrupted
// length field is reported as such instead of exhausting memory.
const clientMaxFrame = 16 << 20

// errNoAnswer is a bounded wait that ended without a frame.
var errNoAnswer = errors.New("no frame within the bound")

// peer is one client connection with a reader goroutine that decodes every
// frame the server sends (honouring the link's reading pauses).
type peer struct {
	name   string
	link   *faults.TCPLink
	frames chan got
	done   chan struct{}
	once   sync.Once
	exited chan struct{}
	rerr   error // the reader's terminal error, valid once frames is closed
	// raw, when not nil, records every byte the server sent, decodable
	// or not: the reader goes on reading into it after bytes it cannot
	// decode, until the connection ends.
	raw *received
}

// received is the byte stream a peer got from the server, whole.
type received struct {
	mu   sync.Mutex
	b    []byte
	last time.Time // when the last byte came
}

func (r *received) add(p []byte) {
	r.mu.Lock()
	r.b = append(r.b, p...)
	r.last = time.Now()
	r.mu.Unlock()
}

// all is a copy of the bytes so far.
func (r *received) all() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.b)
}

// lastAt is when the last byte came (zero: none yet).
func (r *received) lastAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// dial opens a peer to addr or fails the case. The connection is closed
// and its reader stopped when the case ends.
func dial(c *conformance.C, name, addr string) *peer {
	link, err := faults.DialTCP(addr, 5*time.Second)
	if err != nil {
		c.Fatalf("%s: dial %s: %v", name, addr, err)
	}
	return peerOn(c, name, link)
}

// dialNarrow opens a peer whose connection has a small receive buffer
// (dialSmall): the server's writes to it come back short whenever the
// peer falls behind, whatever their size.
func dialNarrow(c *conformance.C, name, addr string) *peer {
	conn, err := dialSmall(addr)
	if err != nil {
		c.Fatalf("%s: dial %s: %v", name, addr, err)
	}
	return peerOn(c, name, faults.NewTCPLink(conn, addr, 5*time.Second))
}

// dialNarrowRecorded is dialNarrow whose peer records every byte it
// gets (peer.raw).
func dialNarrowRecorded(c *conformance.C, name, addr string) *peer {
	conn, err := dialSmall(addr)
	if err != nil {
		c.Fatalf("%s: dial %s: %v", name, addr, err)
	}
	return startPeer(c, &peer{name: name, link: faults.NewTCPLink(conn, addr, 5*time.Second), raw: &received{}})
}

// peerOn starts the reader of a peer on link, closed when the case ends.
func peerOn(c *conformance.C, name string, link *faults.TCPLink) *peer {
	return startPeer(c, &peer{name: name, link: link})
}

// startPeer starts p's reader, closed when the case ends.
func startPeer(c *conformance.C, p *peer) *peer {
	p.frames, p.done, p.exited = make(chan got, 1024), make(chan struct{}), make(chan struct{})
	go p.read()
	c.Cleanup(p.close)
	c.HangUpOnStop(p.close)
	return p
}

// dialQuiet opens a peer without a reader (for cases that read themselves
// or never read).
func dialQuiet(c *conformance.C, name, addr string) *faults.TCPLink {
	link, err := faults.DialTCP(addr, 5*time.Second)
	if err != nil {
		c.Fatalf("%s: dial %s: %v", name, addr, err)
	}
	c.Cleanup(func() { link.Close() })
	c.HangUpOnStop(func() { link.Close() })
	return link
}

func (p *peer) read() {
	defer close(p.exited)
	framesOpen := true
	defer func() {
		if framesOpen {
			close(p.frames)
		}
	}()
	dec := wire.NewDecoder(clientMaxFrame)
	buf := make([]byte, 256<<10)
	for {
		for {
			h, payload, ok, err := dec.Next()
			if err != nil {
				p.rerr = fmt.Errorf("undecodable bytes from the server: %w", err)
				if p.raw != nil {
					framesOpen = false
					close(p.frames)
					p.recordRest(buf)
				}
				return
			}
			if !ok {
				break
			}
			g := got{h: h, payload: bytes.Clone(payload), at: time.Now()}
			select {
			case p.frames <- g:
			case <-p.done:
				p.rerr = errors.New("peer closed")
				return
			}
		}
		n, err := p.link.Read(buf)
		if n > 0 {
			dec.Write(buf[:n])
			if p.raw != nil {
				p.raw.add(buf[:n])
			}
		}
		if err != nil {
			if dec.Buffered() > 0 {
				err = fmt.Errorf("%w with %d bytes of a partial frame buffered", err, dec.Buffered())
			}
			p.rerr = err
			return
		}
	}
}

// recordRest reads the rest of the connection into p.raw, until it ends
// or the peer is closed.
func (p *peer) recordRest(buf []byte) {
	for {
		n, err := p.link.Read(buf)
		if n > 0 {
			p.raw.add(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// close closes the connection and waits for the reader to exit.
func (p *peer) close() {
	p.once.Do(func() {
		close(p.done)
		p.link.Close()
		<-p.exited
	})
}

// next returns the next frame, or errNoAnswer after timeout, or the
// reader's terminal error (io.EOF when the server closed).
func (p *peer) next(timeout time.Duration) (got, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case g, ok := <-p.frames:
		if !ok {
			return got{}, p.rerr
		}
		return g, nil
	case <-t.C:
		return got{}, errNoAnswer
	}
}

// write writes all of b or fails the case.
func (p *peer) write(c *conformance.C, b []byte) {
	if _, err := p.link.Write(b); err != nil {
		c.Fatalf("%s: write %d bytes: %v", p.name, len(b), err)
	}
}

// expectEcho waits for the echo of DATA (token, seq) of size payload bytes
// and checks every byte; it fails the case with the evidence otherwise.
func (p *peer) expectEcho(c *conformance.C, token, seq uint64, size int, timeout time.Duration) got {
	g, err := p.next(timeout)
	if err != nil {
		c.Evidencef("%s: waiting for the echo of DATA token %d seq %d (%d B) for %v: %v", p.name, token, seq, size, timeout, err)
		c.Fatalf("%s: echo of seq %d: %v", p.name, seq, err)
	}
	if why := checkEcho(g, token, seq, size); why != "" {
		c.Evidencef("%s: sent DATA token %d seq %d len %d; got %s", p.name, token, seq, size, g)
		c.Fatalf("%s: echo of seq %d: %s", p.name, seq, why)
	}
	return g
}

// checkEcho says what is wrong with g as the echo of (token, seq, size).
func checkEcho(g got, token, seq uint64, size int) string {
	switch {
	case g.h.Kind == wire.KindReject:
		return fmt.Sprintf("refused: REJECT %q", g.payload)
	case g.h.Kind != wire.KindData:
		return fmt.Sprintf("got %v, want DATA", g.h.Kind)
	case g.h.Token != token:
		return fmt.Sprintf("token %d, want %d: delivered to the wrong connection", g.h.Token, token)
	case g.h.Seq != seq:
		return fmt.Sprintf("seq %d, want %d: lost or reordered", g.h.Seq, seq)
	case len(g.payload) != size:
		return fmt.Sprintf("payload %d bytes, want %d", len(g.payload), size)
	}
	want := make([]byte, size)
	fill(want, token, seq)
	if i := firstDiff(g.payload, want); i >= 0 {
		return fmt.Sprintf("payload differs from byte %d of %d: corrupted", i, size)
	}
	return ""
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return len(a)
	}
	return -1
}

// fill writes the checkable pattern of (token, seq) into p.
func fill(p []byte, token, seq uint64) { wire.FillPattern(p, token, seq) }

// dataFrame is DATA (token, seq) with a size-byte checkable payload.
func dataFrame(token, seq uint64, size int) []byte {
	p := make([]byte, size)
	fill(p, token, seq)
	return wire.AppendFrame(nil, wire.KindData, 0, token, seq, monoNow(), p)
}

// dataFrames is n frames (seq 0..n-1) of the given sizes (cycled).
func dataFrames(token uint64, n int, sizes ...int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = dataFrame(token, uint64(i), sizes[i%len(sizes)])
	}
	return out
}

func payloadLen(frame []byte) int { return len(frame) - wire.HeaderSize }

// readFrame reads exactly one frame from r (whose deadline the caller set).
func readFrame(r io.Reader) (got, error) {
	hdr := make([]byte, wire.HeaderSize)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return got{}, err
	}
	h, err := wire.ParseHeader(hdr, clientMaxFrame)
	if err != nil {
		return got{}, err
	}
	payload := make([]byte, h.PayloadLen())
	if _, err := io.ReadFull(r, payload); err != nil {
		return got{}, fmt.Errorf("payload of %v: %w", h.Kind, err)
	}
	return got{h: h, payload: payload, at: time.Now()}, nil
}

// isTimeout reports whether err is a deadline expiry.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// echoBound is how long any single echo may take in the cases that only
// check correctness. A correct reactor answers a complete frame within one
// round — at most the sum of one turn's budgets over the ready sources, a
// few milliseconds here — so 2 s is a margin of hundreds against a stalled
// or descheduled VM, and still short enough that a lost frame fails fast.
const echoBound = 2 * time.Second

// maxFrame is the instance's frame limit (whole frame): the reference
// configuration's, or the reference default for a black box.
func maxFrame(c *conformance.C) int {
	if ref := c.Reference(); ref != nil {
		return ref.Config.MaxFrame
	}
	return wire.DefaultMaxFrame
}

// playAsync plays plan on p's link in the background; the returned channel
// yields its error.
func playAsync(c *conformance.C, p *peer, plan []faults.Step) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- faults.Play(c.Context(), p.link, plan) }()
	return errc
}

// firstFew is at most n of xs.
func firstFew(xs []string, n int) []string {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

// storm dials conns connections to addr at once — each waits on its own
// goroutine until all are started and armed (if not nil) has run — and
// returns the errors of those not echoed within bound (stormOne's, token
// i+1 for the i-th).
func storm(addr string, conns int, bound time.Duration, armed func()) []string {
	var wg sync.WaitGroup
	errs := make([]error, conns)
	start := make(chan struct{})
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = stormOne(addr, uint64(i+1), bound)
		}()
	}
	if armed != nil {
		armed()
	}
	close(start)
	wg.Wait()
	var bad []string
	for _, err := range errs {
		if err != nil {
			bad = append(bad, err.Error())
		}
	}
	return bad
}

// stormOne is one connection of an accept storm: dial, one 64-byte DATA
// frame, its echo checked, all within bound.
func stormOne(addr string, token uint64, bound time.Duration) error {
	link, err := faults.DialTCP(addr, bound)
	if err != nil {
		return fmt.Errorf("conn %d: %w", token, err)
	}
	defer link.Close()
	conn := link.Conn()
	conn.SetDeadline(time.Now().Add(bound))
	if _, err := conn.Write(dataFrame(token, 0, 64)); err != nil {
		return fmt.Errorf("conn %d: write: %w", token, err)
	}
	g, err := readFrame(conn)
	if err != nil {
		return fmt.Errorf("conn %d: %w", token, err)
	}
	if why := checkEcho(g, token, 0, 64); why != "" {
		return fmt.Errorf("conn %d: %s", token, why)
	}
	return nil
}
