package cases

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
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
// executes" (tigerbeetle/tigerbeetle#6), the race its send round plays
// (p3SendRound): io_uring takes its own reference to the socket, so the
// send outlives the close (axboe/liburing#782); a completion of the old
// descriptor's taken for the new connection's that got its number
// (netty/netty-incubator-transport-io_uring#194); tokio-uring closing a
// descriptor before its in-flight operations ended (tokio-rs/tokio-uring#2,
// #8).
func p3Case() conformance.Case {
	return conformance.Case{
		ID:    "P3",
		Title: "a reused descriptor number never receives the old connection's result",
		Claim: fmt.Sprintf("in each of %d rounds, connection A (%d KiB client buffers, never reading) sends frames tagged with its token until the server is seen holding echoes it cannot write (an operation on A in flight). "+
			"Even rounds: A is reset, and %v later connection B is opened and sends %d frames tagged with its own token; B gets back exactly its own bytes, in order, then %d more of its own, and nothing else. "+
			"Odd rounds (the send round): A, its segments at most %d B each way (TCP_MAXSEG, so that the kernel gives the server a send buffer of tens of KiB, not megabytes), sends %d KiB at a time, each once the server has read what came before, until the server is seen holding echoes with everything sent read, twice %v apart; A is half-closed; once the server has let go of A's descriptor number (its descriptor table) while A's socket is still open in the kernel with no descriptor of the server's on it (something in flight holds it: a write blocked on A's full send queue), B is opened and takes the number; A then reads what is left, so that the operation in flight on A ends, and B must get back exactly its own %d frames and %d more, and nothing else. "+
			"A send round in which the server, reading everything it was sent, was not seen holding, or let go of A's number with nothing holding A's socket, is played again on new connections, %d times at most; one in which the server stopped reading A, read A's end and kept A open (it writes what it holds first), or did not read A's end, is not. "+
			"On a reference target one more round: the server closes A itself (REJECT of an over-size header, the reference protocol) with nothing of A's unread, so that a completion design closes it with A's receive armed; B takes A's number, A's client writes a frame, and B must never receive it. "+
			"Inconclusive unless in some round B got the descriptor number A had (its descriptor table in /proc, each connection's socket found by the inode inet_diag gives its server end) while the server held A's echoes (a reset round), had an operation on A in flight (a send round: A's socket open in no descriptor of the server's), or closed A itself (the reference round)",
			p3Rounds, smallClientBuf>>10, p3Gap, p3Frames, p3Frames, p3Segment, p3FillPiece>>10, p3Recheck, p3Frames, p3Frames, p3SendTries),
		Bound:    fmt.Sprintf("B's echoes within %v; then nothing more for %v; A's hold seen within %v of its first byte in a reset round, %v in a send round, where the server must let go of A's number within %v of the half-close, or is taken as keeping A once it has read A's end and still holds A %v later (a round whose server was not seen holding in that time does not count towards the precondition)", echoBound, p3Quiet, p3HoldFor, p3SendHoldFor, p3CloseWait, p3Keep),
		Setup:    conformance.Setup{Tweak: p3Tweak},
		Run:      runP3,
		PeerBugs: []string{"liburing-close-no-cancel"},
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

// P3's rounds: p3Rounds of them. A reset round fills A for at most
// p3HoldFor and dials B p3Gap after A's reset (time for the server to
// close A and free its number, as I1's gap). A send round fills A, over
// segments of p3Segment bytes, p3FillPiece at a time for at most
// p3SendHoldFor, holding seen again p3Recheck later; the server has
// p3CloseWait to let go of A's number after the half-close, and is taken
// as keeping A once it read A's end and still held it p3Keep later; A
// reads what is left for at most p3Drain; a send round not set up is
// played p3SendTries times at most. In every round B sends p3Frames
// frames of p3Size bytes twice, must then get nothing for p3Quiet, and
// the server has p3Settle to let go of B before the next round.
const (
	p3Rounds      = 4
	p3HoldFor     = 200 * time.Millisecond
	p3SendHoldFor = time.Second
	p3Recheck     = 30 * time.Millisecond
	p3CloseWait   = 500 * time.Millisecond
	p3Keep        = 100 * time.Millisecond
	p3SendTries   = 3
	p3FillPiece   = 16 * streamFrameSize
	p3Segment     = 536
	p3Gap         = 5 * time.Millisecond
	p3Frames      = 4
	p3Size        = 256
	p3Quiet       = 20 * time.Millisecond
	p3Drain       = time.Second
	p3Settle      = 200 * time.Millisecond
	// p3Accept is what the server-close round gives the server to accept
	// B: on loopback, a wakeup of its loop.
	p3Accept = 20 * time.Millisecond
)

// p3Round is what one round saw.
type p3Round struct {
	holding    bool   // the server held A's echoes (or, a send round, had an operation on A in flight) when B took a number
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
		var r p3Round
		if i%2 == 0 {
			r = p3ResetRound(c, pids, i)
		} else {
			r = p3SendRound(c, pids, i)
		}
		if r.reused() {
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
		c.Inconclusivef("in none of %d rounds did B get the descriptor number A had while the server held A's echoes (a reset round), had an operation on A in flight (a send round) or closed A itself (a reference target's round): a reused number was not tested", rounds)
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
	bTCP := p3ConnectB(c, round, bSock, tokenB)
	defer bTCP.Close()
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
	bTCP.SetReadDeadline(time.Now().Add(p3Settle))
	extra := make([]byte, 4096)
	if n, err := bTCP.Read(extra); n > 0 {
		c.Evidencef("round %d: A (token %d) was closed by the server; A's client then wrote one frame; B (token %d), on A's number, got %d bytes it never sent", round, tokenA, tokenB, n)
		c.Fatalf("round %d: B received %d bytes it never sent, after the server closed A and A's client wrote", round, n)
	} else if err != nil && !isTimeout(err) && !errors.Is(err, io.EOF) {
		c.Fatalf("round %d: B: %v", round, err)
	}
	p3Exchange(c, round, bTCP, tokenB, p3Frames)
	return r
}

// p3ConnectB connects B's socket, made before the round let go of A's
// number, and has B exchange its first p3Frames frames. The server's
// accept of B takes A's number if it is the lowest free one. It is given
// p3Accept, with nothing opened meanwhile (reading /proc opens a
// descriptor, which an in-process server's accept would then lose A's
// number to), before B's descriptor is duplicated into a net.Conn, which
// takes a number of its own: a server slower than that makes a round
// without the precondition (the caller looks for B's number in the
// server's table afterwards), not a verdict.
func p3ConnectB(c *conformance.C, round int, bSock *unconnected, tokenB uint64) *net.TCPConn {
	if err := bSock.Connect(); err != nil {
		c.Fatalf("round %d: B: %v", round, err)
	}
	time.Sleep(p3Accept)
	b, err := bSock.Conn()
	if err != nil {
		c.Fatalf("round %d: B: %v", round, err)
	}
	bTCP := b.(*net.TCPConn)
	p3Exchange(c, round, bTCP, tokenB, 0)
	return bTCP
}

// p3ResetRound plays round i: A held, A reset, B checked twice.
func p3ResetRound(c *conformance.C, pids []int, i int) p3Round {
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
		if len(a.pend) == 0 && a.held() > echoThreshold(c) && a.q.outputBlocked() {
			r.holding = true
			break
		}
	}
	r.fdA, r.inoA, r.why = serverFd(pids, a.socks)
	a.conn.SetLinger(0)
	a.conn.Close()
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
	note := fmt.Sprintf("round %d (A reset): ", i)
	switch {
	case !r.holding:
		note += fmt.Sprintf("the server was not seen holding A's echoes within %v", p3HoldFor)
	case r.fdA < 0 || r.fdB < 0:
		note += "a descriptor number was not found: " + r.why
	default:
		note += fmt.Sprintf("the server held %d B of A's echoes; A had fd %d, B got fd %d", a.held(), r.fdA, r.fdB)
	}
	c.Evidencef("%s", note)
	p3Exchange(c, i, bTCP, tokenB, p3Frames)
	p3ExpectNothing(c, i, b, fmt.Sprintf("A (token %d) was reset while the server held its echoes; B (token %d) got its %d frames back", 3000+2*i, tokenB, 2*p3Frames))
	// B goes, and the next round starts once the server has let go of
	// it: its number is then free again, and not a lower one than A's.
	b.Close()
	if bSocks != nil {
		p3LetGo(bSocks)
	}
	return r
}

// p3ExpectNothing fails the case if b receives anything within p3Quiet, after
// every echo of its own; what names the round's story for the evidence.
func p3ExpectNothing(c *conformance.C, round int, b net.Conn, what string) {
	b.SetReadDeadline(time.Now().Add(p3Quiet))
	extra := make([]byte, 4096)
	if n, err := b.Read(extra); n > 0 {
		c.Evidencef("round %d: %s, then %d bytes more", round, what, n)
		c.Fatalf("round %d: B received %d bytes it never sent, after its own echoes", round, n)
	} else if err != nil && !isTimeout(err) && !errors.Is(err, io.EOF) {
		c.Fatalf("round %d: B: after its echoes: %v", round, err)
	}
}

// p3LetGo waits, at most p3Settle, for the server to let go of a
// connection's end (gone from the kernel's tables, or no descriptor on it).
func p3LetGo(socks *connQueues) {
	for end := time.Now().Add(p3Settle); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
		if s, ok, err := socks.server.Sample(); err != nil || !ok || s.Inode == 0 {
			return
		}
	}
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

// p3SendRound plays the send round i, again on new connections while it
// could not be set up for want of timing (p3SendTries in all): the round
// in which the server closes A with a write on it still in flight.
func p3SendRound(c *conformance.C, pids []int, i int) p3Round {
	var r p3Round
	for try := range p3SendTries {
		var again bool
		r, again = p3SendTry(c, pids, i, try)
		if !again {
			break
		}
	}
	return r
}

// p3SendTry is one try of the send round i: A (token 3100+10i+2·try,
// B's the next) filled until the server holds echoes it cannot write
// with nothing of A's unread; A half-closed; once the server has let go
// of A's number and A's socket is open with no descriptor of the
// server's on it, B takes the number; A reads what is left, so that what
// was in flight on A ends, while B holds the number; B's echoes are then
// checked. again says the round was not set up for a reason of timing:
// the server not seen holding in time while it read everything sent,
// or A's number let go with nothing
// holding A's socket (the echoes A's half-close found were not yet in a
// write of the server's). A server that read A's end and kept A open, or
// did not read it within p3CloseWait, is not tried again: that is its
// design, the same every time.
func p3SendTry(c *conformance.C, pids []int, i, try int) (r p3Round, again bool) {
	r = p3Round{fdA: -1, fdB: -1}
	tokenA := uint64(3100 + 10*i + 2*try)
	tokenB := tokenA + 1
	label := fmt.Sprintf("round %d (the send round, try %d of %d): ", i, try+1, p3SendTries)
	a := p3DialSmallSegments(c, fmt.Sprintf("round %d: A", i), tokenA)
	defer a.conn.Close()
	held, why := p3FillToHolding(c, a, i)
	if !held {
		// A server that stopped reading A (what it holds waits for its
		// write) holds nothing with everything read, every time.
		c.Evidencef("%s%s", label, why)
		return r, a.q.serverUnread == 0
	}
	r.fdA, r.inoA, r.why = serverFd(pids, a.socks)
	if r.fdA < 0 {
		c.Evidencef("%sA's descriptor number was not found: %s", label, r.why)
		return r, false
	}
	// B's socket is made before A goes: where the client shares the
	// server's descriptor table (an in-process target), the number A
	// frees then goes to the server's accept of B, not to B's own socket.
	bSock, err := newSocketFor(c.Instance().Addr())
	if err != nil {
		c.Fatalf("round %d: B: %v", i, err)
	}
	defer bSock.Close()
	halfClose(c, a)
	heldAtClose := a.held()
	closed, kept := false, false
	var finSeen time.Time
	for end := time.Now().Add(p3CloseWait); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if !holdsSocket(pids, r.fdA, r.inoA) {
			closed = true
			break
		}
		if err := a.sample(); err != nil {
			c.Inconclusivef("round %d: cannot see A's socket queues: %v", i, err)
		}
		if a.finRead() {
			if finSeen.IsZero() {
				finSeen = time.Now()
			} else if time.Since(finSeen) >= p3Keep {
				kept = true
				break
			}
		}
	}
	switch {
	case kept:
		c.Evidencef("%sthe server held %d B of A's echoes (fd %d) when A half-closed, read A's end and still held A %v later: it keeps a connection whose echoes it holds, and nothing is in flight on a closed one", label, heldAtClose, r.fdA, p3Keep)
		p3DrainA(a)
		return r, false
	case !closed:
		c.Evidencef("%sthe server held %d B of A's echoes (fd %d) when A half-closed and neither read A's end nor let go of A's number within %v", label, heldAtClose, r.fdA, p3CloseWait)
		p3DrainA(a)
		return r, false
	}
	// The server has let go of A's number. A's socket open with no
	// descriptor of the server's on it is held by something in flight.
	inFlight := func() (bool, string) {
		fd, ino, why := serverFd(pids, a.socks)
		switch {
		case fd >= 0:
			return false, fmt.Sprintf("A's socket is held as fd %d", fd)
		case ino != r.inoA:
			return false, "A's socket is closed (" + why + ")"
		}
		return true, ""
	}
	if ok, why := inFlight(); !ok {
		c.Evidencef("%sthe server held %d B of A's echoes (fd %d) when A half-closed and let go of A's number with nothing in flight: %s", label, heldAtClose, r.fdA, why)
		p3DrainA(a)
		return r, true
	}
	bTCP := p3ConnectB(c, i, bSock, tokenB)
	defer bTCP.Close()
	bSocks, err := pinQueues(bTCP)
	if err != nil {
		r.why = err.Error()
	} else {
		r.fdB, r.inoB, r.why = serverFd(pids, bSocks)
	}
	// Still in flight once B holds its number: what ends it next is
	// routed while B has A's number.
	r.holding, why = inFlight()
	switch {
	case r.fdB < 0:
		c.Evidencef("%sB's descriptor number was not found: %s", label, r.why)
	case !r.holding:
		c.Evidencef("%sA had fd %d, B got fd %d; what held A's socket had ended by then: %s", label, r.fdA, r.fdB, why)
	default:
		c.Evidencef("%sthe server held %d B of A's echoes when A half-closed, let go of A's number (fd %d) with A's socket still open and held by no descriptor of its own (an operation in flight on it), and gave B fd %d", label, heldAtClose, r.fdA, r.fdB)
	}
	// A reads what is left: the operation in flight on A ends.
	p3DrainA(a)
	p3Exchange(c, i, bTCP, tokenB, p3Frames)
	p3ExpectNothing(c, i, bTCP, fmt.Sprintf("A (token %d) half-closed while the server held its echoes and then read them; B (token %d) got its %d frames back", tokenA, tokenB, 2*p3Frames))
	bTCP.Close()
	if bSocks != nil {
		p3LetGo(bSocks)
	}
	return r, !r.reused() && r.fdB >= 0
}

// p3FillToHolding fills A, within p3SendHoldFor, until the server holds
// echoes it cannot write with everything sent read, twice p3Recheck apart.
// It writes p3FillPiece at a time, each once the server has read what
// came before: a server that writes everything it reads holds nothing
// until its kernel send buffer is full (megabytes, on loopback), and then
// holds at most about a piece, far below what would make a server that
// stops reading a connection whose echoes back up stop (it would not read
// A's end).
func p3FillToHolding(c *conformance.C, a *loaded, i int) (bool, string) {
	deadline := time.Now().Add(p3SendHoldFor)
	for time.Now().Before(deadline) {
		if err := a.sample(); err != nil {
			c.Inconclusivef("round %d: cannot see A's socket queues: %v", i, err)
		}
		if !a.q.serverOpen() {
			c.Inconclusivef("round %d: A: the server ended the connection after %d bytes, while it was being filled, before it was seen holding echoes (%v)", i, a.sent, a.q)
		}
		n := 0
		switch {
		case len(a.pend) > 0:
			n = len(a.pend)
		case a.q.serverUnread > 0:
			// the server reads what was sent
		case a.q.clientUnsent == 0 && a.held() > echoThreshold(c) && a.q.outputBlocked():
			time.Sleep(p3Recheck)
			if err := a.sample(); err != nil {
				c.Inconclusivef("round %d: cannot see A's socket queues: %v", i, err)
			}
			if a.q.serverUnread == 0 && a.q.clientUnsent == 0 && a.held() > echoThreshold(c) && a.q.outputBlocked() {
				return true, ""
			}
		case a.held() <= echoThreshold(c):
			n = p3FillPiece
		}
		if n > 0 {
			if _, err := a.writeSome(n, 5*time.Millisecond); err != nil {
				c.Inconclusivef("round %d: A: the server ended the connection after %d bytes, while it was being filled: %v", i, a.sent, err)
			}
			continue
		}
		time.Sleep(time.Millisecond)
	}
	return false, fmt.Sprintf("the server was not seen holding A's echoes with everything read within %v (%d bytes sent, %d held, %v)", p3SendHoldFor, a.sent, a.held(), a.q)
}

// p3DrainA reads what is left of A's echoes, for at most p3Drain: the
// server's write pending on A ends. A is not judged: the end of its
// stream, a reset, or bytes not its own end the reading.
func p3DrainA(a *loaded) {
	for end := time.Now().Add(p3Drain); time.Now().Before(end); {
		if _, err := a.readSome(256<<10, 20*time.Millisecond); err != nil {
			break
		}
	}
	a.conn.Close()
}

// p3DialSmallSegments opens a loaded connection (dialLoaded) whose
// segments carry at most p3Segment bytes each way (TCP_MAXSEG, set before
// the handshake announces it): the kernel sizes the server's send buffer
// from its segment size and congestion window, to megabytes for
// loopback's 64 KiB segments, and to tens of KiB for these, so that the
// server's writes block after a short fill.
func p3DialSmallSegments(c *conformance.C, name string, token uint64) *loaded {
	d := net.Dialer{Timeout: echoBound, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			for _, o := range []struct{ level, opt, v int }{
				{syscall.SOL_SOCKET, syscall.SO_RCVBUF, smallClientBuf},
				{syscall.SOL_SOCKET, syscall.SO_SNDBUF, clientSendBuf},
				{syscall.IPPROTO_TCP, syscall.TCP_MAXSEG, p3Segment},
			} {
				if serr == nil {
					serr = syscall.SetsockoptInt(int(fd), o.level, o.opt, o.v)
				}
			}
		})
		return errors.Join(err, serr)
	}}
	conn, err := d.Dial("tcp", c.Instance().Addr())
	if err != nil {
		c.Fatalf("%s: dial: %v", name, err)
	}
	c.Cleanup(func() { conn.Close() })
	tcp := conn.(*net.TCPConn)
	socks, err := pinQueues(tcp)
	if err != nil {
		c.Inconclusivef("%s: cannot see the connection's sockets, so cannot tell whether the server holds anything: %v", name, err)
	}
	return &loaded{name: name, conn: tcp, socks: socks, token: token}
}
