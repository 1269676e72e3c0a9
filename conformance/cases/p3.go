package cases

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/wire"
)

// p3Case is P3: a descriptor number reused while an operation on the old
// connection is in flight never receives that operation's result.
//
// It would have caught: reads still pending on a closed socket completing
// on the new connection that got its number (axboe/liburing#363); a
// multishot recv that goes on receiving after close(2) without a cancel
// (axboe/liburing#1048, #932: no FIN is even sent while it holds the
// socket); close issued with a send or recv in flight, "the closed fd
// number might get reused for a different socket before the send/recv
// executes" (tigerbeetle/tigerbeetle#6); tokio-uring closing a descriptor
// before its in-flight operations ended (tokio-rs/tokio-uring#2, #8).
func p3Case() conformance.Case {
	return conformance.Case{
		ID:    "P3",
		Title: "a reused descriptor number never receives the old connection's result",
		Claim: fmt.Sprintf("in each of %d rounds, connection A (%d KiB client buffers, never reading) sends frames tagged with its token until the server is seen holding echoes it cannot write (an operation on A in flight; before a half-close, with everything sent read, so that the FIN is read at once); A is then reset (even rounds) or half-closed (odd rounds), and %v later connection B is opened and sends %d frames tagged with its own token; "+
			"B gets back exactly its own bytes, in order, then (A, if half-closed, having read what is left, so that the server's write pending on it ends) %d more of its own, and nothing else. "+
			"On a reference target one more round: the server closes A itself (REJECT of an over-size header, the reference protocol) with nothing of A's unread, so that a completion design closes it with A's receive armed; B takes A's number, A's client writes a frame, and B must never receive it. "+
			"Inconclusive unless in some round the server was seen holding A's echoes and gave B the descriptor number A had (its descriptor table in /proc, each connection's socket found by the inode inet_diag gives its server end)",
			p3Rounds, smallClientBuf>>10, p3Gap, p3Frames, p3Frames),
		Bound: fmt.Sprintf("B's echoes within %v; then nothing more for %v; A's hold seen within %v of its first byte (a round whose server was not seen holding in that time does not count towards the precondition)", echoBound, p3Quiet, p3HoldFor),
		Setup: conformance.Setup{Tweak: p3Tweak},
		Run:   runP3,
	}
}

// p3Tweak gives a reference design on the completion path one data loop:
// a completion comes back on the ring that submitted its operation, so
// A's result in flight can reach B only where B is on A's ring, and with
// several loops the flow hash or the assignment puts B on another ring as
// often as not (a reused number that tests nothing). One data loop of a
// multi-loop proactor is the ring every connection shares; on
// uring-mainsub the acceptor's ring still accepts both and hands them
// over. The epoll designs are left as they are.
func p3Tweak(d reactors.DesignName, cfg *reactors.Config) {
	if designs.Completion(d) {
		withLoops(d, cfg, 1)
	}
}

// P3's rounds: p3Rounds of them; A fills for at most p3HoldFor; B is
// dialled p3Gap after A goes (time for the server to close A and free its
// number, as I1's gap), and sends p3Frames frames of p3Size bytes twice,
// the second time after a half-closed A read what was left (for at most
// p3Drain); B must then get nothing for p3Quiet, and the server has
// p3Settle to let go of B before the next round.
const (
	p3Rounds  = 4
	p3HoldFor = 200 * time.Millisecond
	p3Gap     = 5 * time.Millisecond
	p3Frames  = 4
	p3Size    = 256
	p3Quiet   = 20 * time.Millisecond
	p3Drain   = time.Second
	p3Settle  = 200 * time.Millisecond
	// p3Accept is what the server-close round gives the server to accept
	// B: on loopback, a wakeup of its loop.
	p3Accept = 20 * time.Millisecond
)

// p3Round is what one round saw.
type p3Round struct {
	holding    bool   // the server held A's echoes when A went
	fdA, fdB   int    // the server's descriptor numbers for A and B (-1: not found)
	inoA, inoB uint64 // their sockets' inodes
	why        string // why a descriptor number was not found
}

// reused reports whether the round reached P3's precondition: the server
// held A's echoes and gave B A's number, a socket of its own.
func (r p3Round) reused() bool {
	return r.holding && r.fdA >= 0 && r.fdA == r.fdB && r.inoA != r.inoB
}

func runP3(c *conformance.C) {
	pids, err := serverPids(c)
	if err != nil {
		c.Inconclusivef("the target's processes, whose descriptor tables show a reused number, could not be listed: %v", err)
	}
	reached, rounds := 0, p3Rounds
	for i := range p3Rounds {
		if p3RoundRun(c, pids, i).reused() {
			reached++
		}
	}
	if c.Reference() != nil {
		rounds++
		if p3ServerCloseRound(c, pids).reused() {
			reached++
		}
	}
	if reached == 0 {
		c.Inconclusivef("in none of %d rounds was the server seen holding A's echoes (or, a reference target, closing A itself) and giving B the descriptor number A had: a reused number was not tested", rounds)
	}
	c.Logf("%d of %d rounds reused A's descriptor number for B while an operation on A could be in flight", reached, rounds)
}

// p3ServerCloseRound is the round a reference target adds to the others:
// the server closes A itself — an over-size header is refused with
// REJECT and the connection closed (the reference protocol) — while
// nothing of A's is left to read, so that a completion design closes it
// with A's receive armed: the close a client's reset or FIN never causes,
// since those end the receive first. B, dialled once A's socket has left
// the server's descriptor table, takes A's number; A's client then writes
// a frame, which B must never receive, and B's own frames come back
// exactly.
func p3ServerCloseRound(c *conformance.C, pids []int) p3Round {
	const tokenA, tokenB = 3100, 3101
	round := p3Rounds
	r := p3Round{fdA: -1, fdB: -1}
	a, err := net.DialTimeout("tcp", c.Instance().Addr(), echoBound)
	if err != nil {
		c.Fatalf("round %d: A: dial: %v", round, err)
	}
	defer a.Close()
	aTCP := a.(*net.TCPConn)
	p3Exchange(c, round, aTCP, tokenA, 0)
	aSocks, err := pinQueues(aTCP)
	if err != nil {
		r.why = err.Error()
	} else {
		r.fdA, r.inoA, r.why = serverFd(pids, aSocks)
	}
	// B's socket is made before the server closes A: where the client
	// shares the server's descriptor table (an in-process target), the
	// lowest free number then goes to the server's accept of B, not to
	// B's own socket.
	bSock, err := newSocketFor(c.Instance().Addr())
	if err != nil {
		c.Fatalf("round %d: B: %v", round, err)
	}
	defer bSock.Close()
	hdr := make([]byte, wire.HeaderSize)
	wire.PutHeader(hdr, wire.Header{Length: uint32(2*maxFrame(c)) + wire.HeaderSize, Kind: wire.KindData, Token: tokenA, Seq: p3Frames})
	aTCP.SetDeadline(time.Now().Add(echoBound))
	if _, err := aTCP.Write(hdr); err != nil {
		c.Fatalf("round %d: A: writing the over-size header: %v", round, err)
	}
	if g, err := readFrame(aTCP); err != nil || g.h.Kind != wire.KindReject {
		c.Fatalf("round %d: A: an over-size header (the reference protocol's limit %d B) got %v, %v; want REJECT", round, maxFrame(c), g, err)
	}
	// A's socket leaves the server's table when the server closes it; its
	// number is then free for B.
	if r.fdA >= 0 {
		gone := false
		for end := time.Now().Add(echoBound); !gone && time.Now().Before(end); time.Sleep(time.Millisecond) {
			gone = !holdsSocket(pids, r.fdA, r.inoA)
		}
		if !gone {
			c.Fatalf("round %d: A: the server still held its socket (fd %d) %v after refusing the over-size header with REJECT: the reference protocol closes it", round, r.fdA, echoBound)
		}
	}
	if err := bSock.Connect(); err != nil {
		c.Fatalf("round %d: B: %v", round, err)
	}
	// The server's accept of B takes A's number if it is the lowest free
	// one. It is given p3Accept, with nothing opened meanwhile (reading
	// /proc opens a descriptor, which an in-process server's accept would
	// then lose A's number to), before B's descriptor is duplicated into a
	// net.Conn, which takes a number of its own: a server slower than that
	// makes a round without the precondition, not a verdict.
	time.Sleep(p3Accept)
	b, err := bSock.Conn()
	if err != nil {
		c.Fatalf("round %d: B: %v", round, err)
	}
	defer b.Close()
	bTCP := b.(*net.TCPConn)
	p3Exchange(c, round, bTCP, tokenB, 0)
	if bSocks, err := pinQueues(bTCP); err == nil {
		var why string
		r.fdB, r.inoB, why = serverFd(pids, bSocks)
		if r.why == "" {
			r.why = why
		}
	} else if r.why == "" {
		r.why = err.Error()
	}
	r.holding = true // an operation on A could be in flight: the server closed A itself
	note := fmt.Sprintf("round %d (the server closes A itself: REJECT of an over-size header): ", round)
	if r.fdA < 0 || r.fdB < 0 {
		note += "a descriptor number was not found: " + r.why
	} else {
		note += fmt.Sprintf("A had fd %d, B got fd %d", r.fdA, r.fdB)
	}
	c.Evidencef("%s", note)
	// A's client writes after the close: a receive left armed on A's socket
	// takes these bytes, and a result routed by number hands them to B.
	aTCP.SetWriteDeadline(time.Now().Add(p3Quiet))
	_, _ = aTCP.Write(dataFrame(tokenA, p3Frames+1, p3Size)) // refused or reset: the correct outcome
	b.SetReadDeadline(time.Now().Add(p3Settle))
	extra := make([]byte, 4096)
	if n, err := b.Read(extra); n > 0 {
		c.Evidencef("round %d: A (token %d) was closed by the server; A's client then wrote one frame; B (token %d), on A's number, got %d bytes it never sent", round, tokenA, tokenB, n)
		c.Fatalf("round %d: B received %d bytes it never sent, after the server closed A and A's client wrote", round, n)
	} else if err != nil && !isTimeout(err) && !errors.Is(err, io.EOF) {
		c.Fatalf("round %d: B: %v", round, err)
	}
	p3Exchange(c, round, bTCP, tokenB, p3Frames)
	return r
}

// p3RoundRun plays round i: A held, A reset or half-closed, B checked
// before and after the server's write pending on A ends.
func p3RoundRun(c *conformance.C, pids []int, i int) p3Round {
	reset := i%2 == 0
	r := p3Round{fdA: -1, fdB: -1}
	a := dialLoaded(c, fmt.Sprintf("round %d: A", i), uint64(3000+2*i))
	deadline := time.Now().Add(p3HoldFor)
	for time.Now().Before(deadline) {
		if _, err := a.writeSome(4*streamFrameSize, 5*time.Millisecond); err != nil {
			// Ending a connection is no claim of this case, and nothing it
			// needs was established.
			c.Inconclusivef("round %d: A: the server ended the connection after %d bytes, while it was being filled, before it was seen holding echoes: %v", i, a.sent, err)
		}
		if err := a.sample(); err != nil {
			c.Inconclusivef("round %d: cannot see A's socket queues: %v", i, err)
		}
		// Before a half-close, everything sent read by the server, so
		// that it reads the FIN at once, while it holds the echoes.
		if len(a.pend) == 0 && a.held() > echoThreshold(c) && a.q.outputBlocked() && (reset || a.q.serverUnread == 0 && a.q.clientUnsent == 0) {
			r.holding = true
			break
		}
	}
	r.fdA, r.inoA, r.why = serverFd(pids, a.socks)
	if reset {
		a.conn.SetLinger(0)
		a.conn.Close()
	} else {
		a.conn.CloseWrite()
	}
	gap := time.NewTimer(p3Gap)
	<-gap.C
	tokenB := uint64(3001 + 2*i)
	b, err := net.DialTimeout("tcp", c.Instance().Addr(), echoBound)
	if err != nil {
		c.Fatalf("round %d: B: dial: %v", i, err)
	}
	defer b.Close() // a case that ends early
	bTCP := b.(*net.TCPConn)
	p3Exchange(c, i, bTCP, tokenB, 0)
	bSocks, err := pinQueues(bTCP)
	if err == nil {
		var why string
		r.fdB, r.inoB, why = serverFd(pids, bSocks)
		if r.why == "" {
			r.why = why
		}
	} else if r.why == "" {
		r.why = err.Error()
	}
	note := fmt.Sprintf("round %d (A %s): ", i, map[bool]string{true: "reset", false: "half-closed, then reading what is left once B was answered"}[reset])
	switch {
	case !r.holding:
		note += fmt.Sprintf("the server was not seen holding A's echoes within %v", p3HoldFor)
	case r.fdA < 0 || r.fdB < 0:
		note += "a descriptor number was not found: " + r.why
	default:
		note += fmt.Sprintf("the server held %d B of A's echoes; A had fd %d, B got fd %d", a.held(), r.fdA, r.fdB)
	}
	c.Evidencef("%s", note)
	if !reset {
		// A reads what is left: the server's write pending on A ends.
		end := time.Now().Add(p3Drain)
		for time.Now().Before(end) {
			if _, err := a.readSome(256<<10, 20*time.Millisecond); err != nil {
				break // the end of A's stream, or bytes not its own: A is not judged
			}
		}
		a.conn.Close()
	}
	p3Exchange(c, i, bTCP, tokenB, p3Frames)
	b.SetReadDeadline(time.Now().Add(p3Quiet))
	extra := make([]byte, 4096)
	if n, err := b.Read(extra); n > 0 {
		c.Evidencef("round %d: A (token %d) %s while the server held its echoes; B (token %d) got its %d frames back, then %d bytes more", i, 3000+2*i, map[bool]string{true: "was reset", false: "half-closed"}[reset], tokenB, 2*p3Frames, n)
		c.Fatalf("round %d: B received %d bytes it never sent, after its own echoes", i, n)
	} else if err != nil && !isTimeout(err) && !errors.Is(err, io.EOF) {
		c.Fatalf("round %d: B: after its echoes: %v", i, err)
	}
	// B goes, and the next round starts once the server has let go of
	// it: its number is then free again, and not a lower one than A's.
	b.Close()
	for end := time.Now().Add(p3Settle); err == nil && time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		if s, ok, serr := bSocks.server.Sample(); serr != nil || !ok || s.Inode == 0 {
			break
		}
	}
	return r
}

// p3Exchange sends frames seq first.. first+p3Frames-1 of token on b in
// one write and reads back exactly those bytes, each compared.
func p3Exchange(c *conformance.C, round int, b *net.TCPConn, token, first uint64) {
	var want []byte
	for seq := first; seq < first+p3Frames; seq++ {
		want = append(want, dataFrame(token, seq, p3Size)...)
	}
	b.SetDeadline(time.Now().Add(echoBound))
	if _, err := b.Write(want); err != nil {
		c.Fatalf("round %d: B: write: %v", round, err)
	}
	got := make([]byte, len(want))
	n, err := io.ReadFull(b, got)
	if i := firstDiff(got[:n], want[:n]); i >= 0 {
		c.Evidencef("round %d: B (token %d) sent frames seq %d..%d; byte %d of what came back differs: got %#02x, sent %#02x", round, token, first, first+p3Frames-1, i, got[i], want[i])
		c.Fatalf("round %d: B received bytes it never sent (another connection's, or from the wrong place in its own stream)", round)
	}
	if err != nil {
		c.Fatalf("round %d: B: %d of the %d bytes of its frames seq %d..%d came back, then %v", round, n, len(want), first, first+p3Frames-1, err)
	}
}
