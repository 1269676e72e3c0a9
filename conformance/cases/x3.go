package cases

import (
	"fmt"

	"github.com/reactorlab/reactorlab/conformance"
)

// x3Case is X3: after SIGTERM each connection's echo stream is an exact
// prefix of what it sent, at least all the server had read, ending in FIN
// (the opt-in stop contract).
func x3Case() conformance.Case {
	return conformance.Case{
		ID:           "X3",
		Title:        "after SIGTERM each echo stream is a prefix of what was sent, ending in FIN",
		Claim:        fmt.Sprintf("after SIGTERM every connection gets back an exact prefix of what it sent (byte for byte, in order), at least all the server had read before the signal, and then FIN, not RST, also for what the client sends after the FIN (written every 5 ms for %v after it: a close that does not read to the client's EOF resets them, and a reset destroys echoes the client has not read yet): %s", finProbeWait, termStimulus),
		BlackBoxBugs: []string{"rst-on-term", "drop-on-term", "close-at-fin-on-term"},
		Bound: fmt.Sprintf("the end within X4's limit, the stop grace (--stop-grace) + %v (a connection still open then is X4's failure, and this case inconclusive); "+
			"echoed ≥ what the server had read, from both ends' kernel queues (inet_diag) at rest just before the signal, less a partial frame (%d B − 1) that a framed server may hold unanswered; the evidence says how much of it the server held itself", termMargin, termFrame),
		Needs: conformance.NeedStopContract,
		Run:   runX3,
	}
}

func runX3(c *conformance.C) {
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
		c.Inconclusivef("%d of %d connections still open %v after SIGTERM (%s): how they would end was not seen (that is X4's failure)",
			open, len(l.streams), l.endBy.Sub(l.signalAt), l.endArithmetic)
	}
}

// judgeAnswered fails the case if s, which ended in FIN, got back less
// than the server had read of it before the signal (read0, of which it
// held held0), less one frame; the queues unread makes it inconclusive.
func judgeAnswered(c *conformance.C, s *termStream, read0, held0 int64) {
	echoed, sent := s.echoed.Load(), s.sent.Load()
	if echoed > sent {
		c.Errorf("%s: %d bytes came back, more than the %d sent", s.name, echoed, sent)
		return
	}
	if read0 < 0 {
		c.Inconclusivef("%s: what the server had read before the signal could not be read from the kernel's queues (inet_diag): whether it answered it is not known", s.name)
	}
	c.Evidencef("%s: before the signal the server had read at least %d bytes and held %d of them unanswered", s.name, read0, held0)
	if limit, arithmetic := x3AnsweredLimit(read0); echoed < limit {
		c.Errorf("%s: %d bytes came back before the server's FIN, fewer than %s: it dropped %d bytes it had read", s.name, echoed, arithmetic, read0-echoed)
	}
}

// x3AnsweredLimit is the least a stream that ended in FIN must have had
// echoed: what the server had read of it before the signal (read0), less
// a partial frame a framed server may rightly hold unanswered.
func x3AnsweredLimit(read0 int64) (limit int64, arithmetic string) {
	limit = read0 - (termFrame - 1)
	return limit, fmt.Sprintf("the %d bytes read before SIGTERM − a partial frame (%d B − 1) = %d bytes", read0, termFrame, limit)
}
