package cases

import (
	"fmt"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
)

// m5Case is M5: a STOP is acknowledged, and observed by every loop, idle
// ones included, within the bound.
func m5Case() conformance.Case {
	return conformance.Case{
		ID:    "M5",
		Title: "STOP observed by every loop",
		Claim: "with one connection on one loop and every other loop idle, a STOP frame is acknowledged, and every loop observes it, within the bound: an idle loop must be woken for it",
		Bound: fmt.Sprintf("STOP_ACK and every loop's observation ≤ %v: the loop that reads the STOP wakes each other loop through its ingress eventfd (one write, one wakeup: microseconds), each observes it at the top of its next round, and with nothing offloaded the ACK follows once all have quiesced; that is a margin of hundreds for a descheduled VM", m5Bound),
		Needs: conformance.NeedControl | conformance.NeedStats,
		Setup: conformance.Setup{Tweak: twoDataLoops},
		Run:   runM5,
	}
}

// m5Bound bounds M5's STOP_ACK and every loop's observation of the STOP.
const m5Bound = time.Second

func runM5(c *conformance.C) {
	inst := c.Instance()
	// One connection, served once, then idle: it is on one loop, and
	// every loop waits in epoll_wait when the STOP comes.
	data := dial(c, "data conn", inst.Addr())
	data.write(c, dataFrame(1, 0, 64))
	data.expectEcho(c, 1, 0, 64, echoBound)
	ctl := dial(c, "control conn", inst.ControlAddr())
	time.Sleep(50 * time.Millisecond) // every loop back in epoll_wait
	sent := sendStop(c, ctl)
	ledger, _ := awaitAck(c, ctl, m5Bound)
	ackAfter := time.Since(sent)
	c.Evidencef("STOP_ACK %v after STOP; ledger %+v", ackAfter.Round(time.Microsecond), ledger)
	if !ledger.Balanced() {
		c.Errorf("STOP_ACK ledger does not balance: %+v", ledger)
	}
	f := c.Stop()
	finalStats(c, f)
	var seen []string
	for _, l := range f.Stats.PerLoop {
		obs := time.Duration(l.StopObservedNs)
		seen = append(seen, fmt.Sprintf("loop %d (%s) %v", l.Loop, l.Role, obs))
		switch {
		case l.StopObservedNs < 0:
			c.Errorf("loop %d (%s) never observed the STOP", l.Loop, l.Role)
		case obs > m5Bound:
			c.Errorf("loop %d (%s) observed the STOP %v after it was issued (bound %v)", l.Loop, l.Role, obs.Round(time.Millisecond), m5Bound)
		}
	}
	c.Evidencef("STOP observed: %s", strings.Join(seen, ", "))
	if ackAfter > m5Bound {
		c.Errorf("STOP_ACK came %v after STOP (bound %v)", ackAfter.Round(time.Millisecond), m5Bound)
	}
}
