package cases

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
)

// burstPlan is a burst on many connections at once (P1, P2): conns
// connections are opened first; then, all released together, each
// writes writes writes of frames frames of size payload bytes each (the
// connection's token, seq counting up), and reads back the whole stream,
// every byte compared with what it sent. Then each writes one frame more
// (the next seq), which must come back too: a completion lost at the
// burst's end (its last send's, a receive's that ended) leaves nothing
// missing from the burst, but a connection that is never answered again.
type burstPlan struct {
	conns, writes, frames, size int
}

// perConn is the bytes each connection sends.
func (b burstPlan) perConn() int { return b.writes * b.frames * (b.size + frameOverhead) }

// frameOverhead is a DATA frame's header: what a frame adds to its payload.
var frameOverhead = len(dataFrame(0, 0, 0))

// burstOutcome is how one connection of a burst ended.
type burstOutcome struct {
	token  uint64
	sent   int
	echoed int
	// failure says what was wrong, "" when every byte came back in order
	// and the frame after the burst was answered.
	failure string
}

// burstResult is what a burst saw: every connection's outcome, and how
// long the slowest took.
type burstResult struct {
	outcomes []burstOutcome
	took     time.Duration
}

// failed lists the connections that did not get their whole stream back,
// or no answer to the frame after it.
func (r burstResult) failed() []burstOutcome {
	var out []burstOutcome
	for _, o := range r.outcomes {
		if o.failure != "" {
			out = append(out, o)
		}
	}
	return out
}

// stream is the bytes connection token writes in a burst: its writes,
// each of b.frames frames.
func (b burstPlan) stream(token uint64) [][]byte {
	var writes [][]byte
	seq := uint64(0)
	for range b.writes {
		var w []byte
		for range b.frames {
			w = append(w, dataFrame(token, seq, b.size)...)
			seq++
		}
		writes = append(writes, w)
	}
	return writes
}

// runBurst opens b.conns connections to the instance (tokens from
// tokenBase), then releases them together. A connection is judged on its
// own stream: every byte back in order within progressBound of the
// previous one, and no end (FIN, RST) before the last. A connection the
// client could not open for want of its own descriptors makes the case
// inconclusive (the environment, not the server); one the server refused
// or did not accept is a failure.
func runBurst(c *conformance.C, b burstPlan, tokenBase uint64, progressBound time.Duration) burstResult {
	addr := c.Instance().Addr()
	conns := make([]*net.TCPConn, 0, b.conns)
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
	}()
	for i := range b.conns {
		conn, err := net.DialTimeout("tcp", addr, echoBound)
		if err != nil {
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				c.Inconclusivef("the client could not open connection %d of %d for want of descriptors of its own (%v): the burst was not made", i+1, b.conns, err)
			}
			c.Fatalf("connection %d of %d: dial %s: %v", i+1, b.conns, addr, err)
		}
		conns = append(conns, conn.(*net.TCPConn))
	}
	outcomes := make([]burstOutcome, len(conns))
	start := make(chan struct{})
	var wg sync.WaitGroup
	began := time.Now()
	for i, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i] = burstOne(conn, b, tokenBase+uint64(i), start, progressBound)
		}()
	}
	close(start)
	wg.Wait()
	return burstResult{outcomes: outcomes, took: time.Since(began)}
}

// burstOne plays one connection of a burst: its writes at once, once start
// closes, and its stream read back and compared.
func burstOne(conn *net.TCPConn, b burstPlan, token uint64, start <-chan struct{}, progressBound time.Duration) burstOutcome {
	o := burstOutcome{token: token}
	writes := b.stream(token)
	want := bytes.Join(writes, nil)
	wrote := make(chan error, 1)
	<-start
	go func() {
		conn.SetWriteDeadline(time.Now().Add(progressBound))
		for _, w := range writes {
			n, err := conn.Write(w)
			o.sent += n
			if err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	buf := make([]byte, 64<<10)
	for o.echoed < len(want) {
		conn.SetReadDeadline(time.Now().Add(progressBound))
		n, err := conn.Read(buf)
		if n > 0 {
			got := buf[:n]
			if o.echoed+n > len(want) {
				o.failure = fmt.Sprintf("%d bytes came back, more than the %d sent", o.echoed+n, len(want))
				break
			}
			if i := firstDiff(got, want[o.echoed:o.echoed+n]); i >= 0 {
				o.failure = fmt.Sprintf("byte %d of the echo differs from what was sent (frame %d): corrupted, reordered or another connection's", o.echoed+i, (o.echoed+i)/(b.size+frameOverhead))
				break
			}
			o.echoed += n
		}
		if err != nil {
			o.failure = burstEnd(err, o.echoed, len(want), progressBound)
			break
		}
	}
	conn.SetWriteDeadline(time.Now()) // a writer still blocked gives up
	if werr := <-wrote; werr != nil && o.failure == "" && o.echoed < len(want) {
		o.failure = fmt.Sprintf("writing: %v", werr)
	}
	if o.failure == "" {
		o.failure = burstAfter(conn, token, uint64(b.writes*b.frames), b.size, progressBound)
	}
	return o
}

// burstAfter writes frame seq after a connection's burst came back whole
// and reads its echo, which must come whole within progressBound. It
// returns what went wrong, "" when the echo came.
func burstAfter(conn *net.TCPConn, token, seq uint64, size int, progressBound time.Duration) string {
	frame := dataFrame(token, seq, size)
	conn.SetDeadline(time.Now().Add(progressBound))
	if _, err := conn.Write(frame); err != nil {
		return fmt.Sprintf("after the burst came back whole, writing one frame more: %v", err)
	}
	got := make([]byte, len(frame))
	n, err := io.ReadFull(conn, got)
	switch {
	case err == nil && !bytes.Equal(got, frame):
		return fmt.Sprintf("after the burst came back whole, the echo of one frame more differs from it (byte %d)", firstDiff(got, frame))
	case err != nil:
		return "after the burst came back whole, one frame more: " + burstEnd(err, n, len(frame), progressBound)
	}
	return ""
}

// burstEnd says in words how a connection's echo stream ended early.
func burstEnd(err error, echoed, want int, progressBound time.Duration) string {
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Sprintf("ended by the server (FIN) after %d of %d bytes came back", echoed, want)
	case errors.Is(err, syscall.ECONNRESET):
		return fmt.Sprintf("reset by the server (RST) after %d of %d bytes came back", echoed, want)
	case isTimeout(err):
		return fmt.Sprintf("stalled: nothing for %v after %d of %d bytes came back", progressBound, echoed, want)
	}
	return fmt.Sprintf("read error after %d of %d bytes came back: %v", echoed, want, err)
}

// reportBurst records a burst's figures and fails the case with the
// connections that did not get their stream back, grouped by how (the
// first few of each).
func reportBurst(c *conformance.C, b burstPlan, r burstResult) {
	echoed := 0
	for _, o := range r.outcomes {
		echoed += o.echoed
	}
	c.Evidencef("sent: %d connections opened first, then each wrote %d frames of %d B in %d write(s) at once (%d B a connection, %d B in all); %d B came back in %v",
		b.conns, b.writes*b.frames, b.size, b.writes, b.perConn(), b.conns*b.perConn(), echoed, r.took.Round(time.Millisecond))
	bad := r.failed()
	if len(bad) == 0 {
		return
	}
	byHow := map[string][]string{}
	for _, o := range bad {
		how := o.failure
		if i := strings.IndexAny(how, "0123456789"); i > 0 {
			how = how[:i] // group by the words before the figures
		}
		byHow[how] = append(byHow[how], fmt.Sprintf("conn %d: %s", o.token, o.failure))
	}
	hows := make([]string, 0, len(byHow))
	for how := range byHow {
		hows = append(hows, how)
	}
	sort.Strings(hows)
	for _, how := range hows {
		c.Evidencef("%d connections %s…: %v", len(byHow[how]), how, firstFew(byHow[how], 3))
	}
	c.Errorf("%d of %d connections did not get their whole stream back in order, or no answer to one frame more after it: %s", len(bad), b.conns, bad[0].failure)
}
