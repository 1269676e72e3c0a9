package cases

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
)

// p4Case is P4: teardown with operations in flight ends within its bound
// and leaks no descriptor.
//
// What it adds over X1-X5: they tear down a server under a steady load
// and judge the STOP's ledger and timing (X1, X2) or each stream's end
// and the listener (X3-X5); P4 tears it down while a burst is still
// arriving and slow readers hold the server's writes (a completion-model
// server has receives and sends in the kernel at that moment), and then
// looks at the server's descriptors: every one of the case's sockets and
// the listener must be released, not merely each connection ended (a
// socket a server shut down without closing, or that a receive still in
// the kernel holds open after close(2), ends nothing or leaks).
//
// It would have caught: a runtime that hangs at shutdown on an accept
// still in the kernel (tokio-rs/tokio-uring#102, fixed by cancelling every
// in-flight operation on drop, #158); close(2) with a recv in flight,
// which neither ends the connection (no FIN) nor frees the socket
// (axboe/liburing#932); a shutdown that abandons operations still in
// flight (commonwarexyz/monorepo#3287).
func p4Case() conformance.Case {
	return conformance.Case{
		ID:    "P4",
		Title: "teardown with operations in flight ends within its bound and leaks no descriptor",
		Claim: fmt.Sprintf("with %d slow readers (%d KiB client buffers) holding the server's writes and a burst in flight (%d connections each writing %d KiB at once), the server is torn down: STOP on a reference reactor's control address, or SIGTERM under the opt-in stop contract (conform --stop sigterm) on a process; "+
			"the readers then read again, and each client closes its end once it reads the server's. Within the bound every connection ends (FIN or RST), each getting back only frames of its own, and no descriptor of the server refers any more to any of the case's sockets (each server end gone, or orphaned: no inode in inet_diag) or to a listener on its port",
			p4Readers, smallClientBuf>>10, p4Bursts, p4BurstSize>>10),
		BlackBoxBugs: []string{"keep-conns-on-term"},
		Bound:        fmt.Sprintf("a reference reactor's stop grace (%v in this case) + %v, or under SIGTERM the stop grace (--stop-grace) + %v (X4's limit); the readers' hold seen within %v (inconclusive unless one of them was)", p4Grace, termMargin, termMargin, p4HoldFor),
		Setup:        conformance.Setup{Tweak: func(_ reactors.DesignName, cfg *reactors.Config) { cfg.StopGrace = p4Grace }},
		Run:          runP4,
	}
}

// P4's stimulus: p4Readers slow readers filled for at most p4HoldFor,
// p4Bursts connections writing p4BurstSize bytes each just before the
// teardown; a reference reactor's stop grace is p4Grace.
const (
	p4Readers   = 2
	p4HoldFor   = 500 * time.Millisecond
	p4Bursts    = 8
	p4BurstSize = 64 << 10
	p4Grace     = 500 * time.Millisecond
)

// p4Conn is one of P4's connections, read as frames after the teardown.
type p4Conn struct {
	name   string
	token  uint64
	p      *peer
	socks  *connQueues
	frames int
	end    string // how it ended ("" while open)
	bad    string // a frame that was not its own
}

func runP4(c *conformance.C) {
	inst := c.Instance()
	term, terminable := inst.(conformance.Terminable)
	var limit time.Duration
	var arithmetic string
	useStop := c.Reference() != nil && inst.ControlAddr() != ""
	switch {
	case useStop:
		grace := c.Reference().Config.StopGrace
		limit = grace + termMargin
		arithmetic = fmt.Sprintf("the stop grace %v + %v = %v", grace, termMargin, limit)
	case c.StopContract() == conformance.StopSIGTERM && terminable:
		limit, arithmetic = x4EndLimit(c.StopGrace())
	default:
		c.Skipf("needs a way to tear the server down: a reference reactor's control address (STOP), or the opt-in stop contract (conform --stop sigterm; Options.Stop) on a process of its own")
	}
	var ctl *peer
	if useStop {
		ctl = dial(c, "control conn", inst.ControlAddr())
	}
	var conns []*p4Conn
	held := 0
	for i := range p4Readers {
		l := dialLoaded(c, fmt.Sprintf("reader %d", i+1), uint64(4000+i))
		deadline := time.Now().Add(p4HoldFor)
		for time.Now().Before(deadline) {
			if _, err := l.writeSome(16*streamFrameSize, 5*time.Millisecond); err != nil {
				// Ending a connection before the teardown is no claim of
				// this case, and the teardown was not reached.
				c.Inconclusivef("%s: the server ended the connection after %d bytes, while it was being filled, before the teardown: %v", l.name, l.sent, err)
			}
			if err := l.sample(); err != nil {
				c.Inconclusivef("%s: cannot see the socket queues: %v", l.name, err)
			}
			if len(l.pend) == 0 && l.held() > echoThreshold(c) && l.q.outputBlocked() {
				held++
				break
			}
		}
		conns = append(conns, &p4Conn{name: l.name, token: l.token, socks: l.socks, p: &peer{name: l.name, link: faults.NewTCPLink(l.conn, inst.Addr(), 5*time.Second)}})
	}
	for i := range p4Bursts {
		p := dial(c, fmt.Sprintf("burst %d", i+1), inst.Addr())
		socks, err := pinQueues(p.link.Conn())
		if err != nil {
			c.Inconclusivef("%s: cannot see the connection's sockets, so cannot tell whether the server releases them: %v", p.name, err)
		}
		conns = append(conns, &p4Conn{name: p.name, token: uint64(4100 + i), p: p, socks: socks})
	}
	var wg sync.WaitGroup
	for _, pc := range conns[p4Readers:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b []byte
			for seq := uint64(0); len(b) < p4BurstSize; seq++ {
				b = append(b, dataFrame(pc.token, seq, 4<<10)...)
			}
			pc.p.link.Conn().SetWriteDeadline(time.Now().Add(limit))
			pc.p.link.Write(b) // a server torn down mid-burst may refuse the rest
		}()
	}
	// The teardown, with the burst in flight.
	var at time.Time
	if useStop {
		at = sendStop(c, ctl)
	} else {
		at = time.Now()
		if err := term.Terminate(); err != nil {
			c.Fatalf("sending SIGTERM: %v", err)
		}
	}
	for _, pc := range conns[:p4Readers] {
		startPeer(c, pc.p) // the readers read again
	}
	endBy := at.Add(limit)
	var ends sync.WaitGroup
	for _, pc := range conns {
		ends.Add(1)
		go func() { defer ends.Done(); pc.drain(endBy) }()
	}
	ends.Wait()
	for _, pc := range conns[p4Readers:] {
		pc.p.link.Conn().SetWriteDeadline(time.Now()) // a write still blocked gives up
	}
	wg.Wait()
	c.Evidencef("teardown (%s) with %d of %d readers seen holding echoes; bound: %s", map[bool]string{true: "STOP", false: "SIGTERM"}[useStop], held, p4Readers, arithmetic)
	open := 0
	for _, pc := range conns {
		c.Evidencef("%s: %d frames back, then %s", pc.name, pc.frames, map[bool]string{true: pc.end, false: "still open"}[pc.end != ""])
		if pc.bad != "" {
			c.Errorf("%s: %s", pc.name, pc.bad)
		}
		if pc.end == "" {
			open++
		}
	}
	if open > 0 {
		c.Fatalf("%d of %d connections still open %v after the teardown (%s)", open, len(conns), limit, arithmetic)
	}
	// Each client closed its end once it read the server's: a server that
	// waits for its clients' EOF (a graceful close) then lets go.
	for {
		leaked := p4Held(c, conns)
		if len(leaked) == 0 {
			break
		}
		if time.Now().After(endBy) {
			c.Fatalf("%v after the teardown (%s), every connection ended and its client closed, the server still holds %d of the case's sockets: %s", limit, arithmetic, len(leaked), strings.Join(firstFew(leaked, 3), "; "))
		}
		time.Sleep(10 * time.Millisecond) // the state of another process's descriptors: nothing to wait on
	}
	if held == 0 {
		c.Inconclusivef("neither reader was seen holding echoes it could not write within %v: the teardown met the burst, but no write held for a slow reader", p4HoldFor)
	}
}

// p4Held lists the case's sockets the server still holds by a descriptor:
// the server ends of its connections (inet_diag: an inode), and any
// listener on the instance's port.
func p4Held(c *conformance.C, conns []*p4Conn) []string {
	var held []string
	for _, pc := range conns {
		if pc.socks == nil || !pc.socks.serverPinned {
			continue
		}
		s, ok, err := pc.socks.server.Sample()
		if err != nil {
			c.Inconclusivef("%s: inet_diag of the server's end: %v", pc.name, err)
		}
		if ok && s.Inode != 0 {
			held = append(held, fmt.Sprintf("%s: the server's end is held by a descriptor (%v)", pc.name, s))
		}
	}
	if inodes, err := listenerInodes(c.Instance().Addr()); err == nil && len(inodes) > 0 {
		held = append(held, fmt.Sprintf("a socket listening on %s is held by a descriptor (inodes %v)", c.Instance().Addr(), inodes))
	}
	return held
}

// drain reads pc's frames until the connection ends or endBy, recording
// how it ended and any frame that is not its own.
func (pc *p4Conn) drain(endBy time.Time) {
	for {
		g, err := pc.p.next(time.Until(endBy))
		switch {
		case errors.Is(err, errNoAnswer):
			return
		case errors.Is(err, io.EOF):
			pc.end = "FIN"
			pc.p.close() // the client's end follows the server's
			return
		case errors.Is(err, syscall.ECONNRESET):
			pc.end = "RST"
			return
		case err != nil:
			pc.end = fmt.Sprintf("a read error (%v)", err)
			return
		}
		pc.frames++
		if g.h.Token != pc.token && pc.bad == "" {
			pc.bad = fmt.Sprintf("frame %d back is %s, another connection's (token %d, want %d)", pc.frames, g, g.h.Token, pc.token)
		}
	}
}
