package cases

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
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

// x5Case is X5: after SIGTERM new connections are refused (the opt-in stop
// contract).
func x5Case() conformance.Case {
	return conformance.Case{
		ID:    "X5",
		Title: "after SIGTERM new connections are refused",
		Claim: fmt.Sprintf("after SIGTERM, while the server still runs (the client keeps its %d pipelining connections open after their end, so a server that waits for its clients stays up), "+
			"every new connection is refused: connect fails (ECONNREFUSED), or the connection is closed (FIN or RST) without its frame echoed", termConns),
		BlackBoxBugs: []string{"serve-after-term"},
		Bound: fmt.Sprintf("probes every %v from %v after the signal (the time a server may take to act on it, on a loaded machine) until the stop grace ends or the process exits, each given %v to be echoed or closed (one neither refused nor closed in that time means the listener still takes connections); "+
			"inconclusive unless at least one probe was made while the process ran", termProbeEvery, termSettle, termProbeWait),
		Needs: conformance.NeedStopContract,
		Run:   runX5,
	}
}

func runX5(c *conformance.C) {
	l := startTermLoad(c, true)
	exited := l.term.Exited()
	settle := time.NewTimer(time.Until(l.signalAt.Add(termSettle)))
	defer settle.Stop()
	select {
	case <-settle.C:
	case <-exited:
	}
	tested, refused := 0, 0
	for seq := uint64(0); time.Now().Before(l.signalAt.Add(c.StopGrace())); seq++ {
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
