package conformance

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/wire"
)

// The SIGTERM stop contract's timing: termSettle is how long a server may
// take to act on the signal before a new connection must be refused (a
// signal reaches a handler in microseconds; a second absorbs a loaded,
// descheduled VM); probes come every termProbeEvery, each waiting
// termProbeWait for its echo or its end.
const (
	termSettle     = time.Second
	termProbeEvery = 100 * time.Millisecond
	termProbeWait  = 500 * time.Millisecond
)

// sigtermCases are the cases of the SIGTERM stop contract (opt-in:
// Options.Stop), for any process target, black box or reference.
func sigtermCases() []Case {
	const stimulus = "two connections pipeline 1 KiB frames through the signal (at most 1 MiB ahead of their echoes, 4 KiB client receive buffers; for 100 ms before the signal the clients do not read, so echoes back up into the server), stop writing when they read the end, then half-close"
	return []Case{{
		ID:           "X3",
		Title:        "after SIGTERM each echo stream is a prefix of what was sent, ending in FIN",
		Claim:        "after SIGTERM every connection gets back an exact prefix of what it sent (byte for byte, in order), at least all the server had read before the signal, and then FIN, not RST, also for what the client sends after the FIN (written every 5 ms for 50 ms after it: a close that does not read to the client's EOF resets them, and a reset destroys echoes the client has not read yet): " + stimulus,
		BlackBoxBugs: []string{"rst-on-term", "drop-on-term", "close-at-fin-on-term"},
		Bound: "the end within the stop grace (--stop-grace, default 5 s) + 1 s for the client to see it on a loaded machine (a connection still open then is X4's failure: this case is then inconclusive); " +
			"'all it had read' is read from both ends' kernel queues (inet_diag) just before the signal, at rest, less one frame (1 KiB) that a framed server may hold unanswered as a partial frame; that part bites only on a server that holds echoes itself at the signal (kernel buffers that absorb the 1 MiB window leave it nothing to drop): the evidence says how much it held",
		Needs: NeedStopContract,
		Run:   runX3,
	}, {
		ID:           "X4",
		Title:        "after SIGTERM no connection outlives the grace period",
		Claim:        "after SIGTERM every connection ends (FIN or RST, or the process is gone) within the stop grace: " + stimulus,
		BlackBoxBugs: []string{"keep-conns-on-term"},
		Bound:        "the stop grace (--stop-grace, default 5 s) + 1 s for the client to see the end on a loaded machine",
		Needs:        NeedStopContract,
		Run:          runX4,
	}, {
		ID:    "X5",
		Title: "after SIGTERM new connections are refused",
		Claim: "after SIGTERM, while the server still runs (the client keeps its two pipelining connections open after their end, so a server that waits for its clients stays up), " +
			"every new connection is refused: connect fails (ECONNREFUSED), or the connection is closed (FIN or RST) without its frame echoed",
		BlackBoxBugs: []string{"serve-after-term"},
		Bound: "probes every 100 ms from 1 s after the signal (the time a server may take to act on it, on a loaded machine) until the stop grace ends or the process exits, each given 500 ms to be echoed or closed (one neither refused nor closed in that time means the listener still takes connections); " +
			"inconclusive unless at least one probe was made while the process ran",
		Needs: NeedStopContract,
		Run:   runX5,
	}}
}

func runX3(c *C) {
	l := startTermLoad(c, false)
	l.awaitEnds()
	open := 0
	for i, s := range l.streams {
		switch s.end {
		case endMismatch:
			c.Errorf("%s: the echo stream is not a prefix of what was sent: %s", s.name, s.mismatch)
		case endReset:
			c.Errorf("%s: ended by RST, not FIN, after %d of %d bytes sent came back", s.name, s.echoed.Load(), s.sent.Load())
		case endError:
			c.Errorf("%s: ended by a read error, not FIN: %v", s.name, s.endErr)
		case endOpen:
			open++
		case endEOF:
			judgeAnswered(c, s, l.read0[i], l.held0[i])
		}
	}
	if open > 0 && !c.Failed() {
		c.Inconclusivef("%d of %d connections still open %v after SIGTERM (the grace %v + %v): how they would end was not seen (that is X4's failure)",
			open, len(l.streams), l.endBy.Sub(l.signalAt), c.stopGrace, termMargin)
	}
}

// judgeAnswered fails the case if s, which ended in FIN, got back less
// than the server had read of it before the signal (read0, of which it
// held held0), less one frame; the queues unread makes it inconclusive.
func judgeAnswered(c *C, s *termStream, read0, held0 int64) {
	echoed, sent := s.echoed.Load(), s.sent.Load()
	if echoed > sent {
		c.Errorf("%s: %d bytes came back, more than the %d sent", s.name, echoed, sent)
		return
	}
	if read0 < 0 {
		c.Inconclusivef("%s: what the server had read before the signal could not be read from the kernel's queues (inet_diag): whether it answered it is not known", s.name)
	}
	c.Evidencef("%s: before the signal the server had read at least %d bytes and held %d of them unanswered", s.name, read0, held0)
	if echoed < read0-(termFrame-1) {
		c.Errorf("%s: the server had read at least %d bytes before SIGTERM, and %d came back before its FIN: it dropped %d bytes it had read", s.name, read0, echoed, read0-echoed)
	}
}

func runX4(c *C) {
	l := startTermLoad(c, false)
	l.awaitEnds()
	for _, s := range l.streams {
		if s.end == endOpen {
			c.Errorf("%s: still open %v after SIGTERM (the grace %v + %v), the server running", s.name, l.endBy.Sub(l.signalAt), c.stopGrace, termMargin)
		}
	}
}

func runX5(c *C) {
	l := startTermLoad(c, true)
	exited := l.term.Exited()
	settle := time.NewTimer(time.Until(l.signalAt.Add(termSettle)))
	defer settle.Stop()
	select {
	case <-settle.C:
	case <-exited:
	}
	tested, refused := 0, 0
	for seq := uint64(0); time.Now().Before(l.signalAt.Add(c.stopGrace)); seq++ {
		if isClosed(exited) {
			break
		}
		at := time.Since(l.signalAt)
		served, how := probeNew(c.Instance().Addr(), seq)
		if isClosed(exited) && !served {
			break // it may have been refused because the process had gone
		}
		tested++
		if served {
			c.Errorf("a connection made %v after SIGTERM was %s", at.Round(time.Millisecond), how)
			break
		}
		refused++
		if refused == 1 {
			c.Evidencef("first probe, %v after SIGTERM: %s", at.Round(time.Millisecond), how)
		}
		sleep := time.NewTimer(termProbeEvery)
		select {
		case <-sleep.C:
		case <-exited:
		}
		sleep.Stop()
	}
	c.Evidencef("%d probes while the server ran, from %v after SIGTERM: %d refused", tested, termSettle, refused)
	if tested == 0 && !c.Failed() {
		c.Inconclusivef("the server exited before the first probe, %v after SIGTERM: refusing new connections was not tested (a gone process refuses them all)", termSettle)
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// probeNew connects to addr, sends one 64 B DATA frame (token 99, seq)
// and waits termProbeWait for its echo. It reports whether the frame was
// echoed (served), and what happened in words. A connection that is
// neither refused nor closed nor answered in that time counts as served:
// the listener still takes connections.
func probeNew(addr string, seq uint64) (served bool, how string) {
	conn, err := net.DialTimeout("tcp", addr, termProbeWait)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return false, "refused (ECONNREFUSED)"
		}
		return true, fmt.Sprintf("neither refused nor accepted within %v (%v): the listener is still open", termProbeWait, err)
	}
	defer conn.Close()
	payload := make([]byte, 64)
	fill(payload, 99, seq)
	frame := wire.AppendFrame(nil, wire.KindData, 0, 99, seq, 0, payload)
	conn.SetDeadline(time.Now().Add(termProbeWait))
	if _, err := conn.Write(frame); err != nil {
		return false, fmt.Sprintf("accepted, then closed before its frame was written (%v)", err)
	}
	got := make([]byte, len(frame))
	n, err := io.ReadFull(conn, got)
	switch {
	case err == nil && bytes.Equal(got, frame):
		return true, "accepted and served: its frame was echoed"
	case isTimeout(err):
		return true, fmt.Sprintf("accepted and neither served nor closed within %v (%d bytes back): the listener still takes connections", termProbeWait, n)
	case err == nil:
		return false, fmt.Sprintf("accepted, answered with %d bytes that are not its echo", n)
	}
	return false, fmt.Sprintf("accepted and closed without an echo (%d bytes back, then %v)", n, err)
}
