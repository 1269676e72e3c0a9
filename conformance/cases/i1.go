package cases

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/faults"
)

// i1Case is I1: a result computed for a closed connection never reaches
// the new connection that reused its fd number.
func i1Case() conformance.Case {
	return conformance.Case{
		ID:         "I1",
		Title:      "stale result never reaches a reused fd",
		Claim:      "a connection closed with its echo still being computed, followed at once by a new connection (which gets the same fd number on the server), never receives the old connection's result",
		WireFaults: []string{"fd-reuse-churn"},
		Bound:      fmt.Sprintf("the new connection's own echo within %v; then nothing else for %v (twice the %v callback: the old result, submitted first, is due before the new one)", echoBound, i1Quiet, i1Callback),
		Setup:      conformance.Setup{Tweak: offloaded("fixed:" + i1Callback.String())},
		Run:        runI1,
	}
}

// i1Callback is I1's callback cost; i1Quiet is how long the new
// connection must get nothing after its own echo: twice the callback,
// long after the old result, which was submitted first, was due.
const (
	i1Callback = 20 * time.Millisecond
	i1Quiet    = 2 * i1Callback
)

func runI1(c *conformance.C) {
	const rounds = 60
	addr := c.Instance().Addr()
	for i := 0; i < rounds; i++ {
		old := uint64(1000 + i)
		link := dialQuiet(c, fmt.Sprintf("round %d", i), addr)
		plan := faults.FdReuseChurn{Every: 1, Reset: i%2 == 1}.Apply(faults.Writes(dataFrame(old, 0, 64)))
		// A short gap lets the server close A (freeing its fd number)
		// before B arrives: a design that accepts before it reads (prio
		// serves listeners first) would otherwise give B a new number
		// and the case would not test anything. 5 ms is a quarter of the
		// callback: A's result is still in flight when B is accepted.
		plan = append(plan, faults.Step{Op: faults.OpSleep, For: 5 * time.Millisecond}, faults.Step{Op: faults.OpReconnect})
		if err := faults.Play(c.Context(), link, plan); err != nil {
			c.Fatalf("round %d: %v", i, err)
		}
		token := uint64(1 + i)
		conn := link.Conn() // the new connection
		conn.SetDeadline(time.Now().Add(echoBound))
		if _, err := conn.Write(dataFrame(token, 0, 64)); err != nil {
			c.Fatalf("round %d: write on the new connection: %v", i, err)
		}
		g, err := readFrame(conn)
		if err != nil {
			c.Fatalf("round %d: the new connection's echo: %v", i, err)
		}
		if g.h.Token == old {
			c.Evidencef("round %d: connection A sent DATA token %d and closed at once; connection B sent DATA token %d", i, old, token)
			c.Fatalf("round %d: connection B received connection A's result (%s)", i, g)
		}
		if why := checkEcho(g, token, 0, 64); why != "" {
			c.Fatalf("round %d: %s", i, why)
		}
		// The old result's callback started first; it is back by now.
		conn.SetReadDeadline(time.Now().Add(i1Quiet))
		if g, err := readFrame(conn); err == nil {
			c.Evidencef("round %d: connection A sent DATA token %d and closed at once; connection B sent DATA token %d", i, old, token)
			c.Fatalf("round %d: connection B received an extra frame: %s", i, g)
		} else if !isTimeout(err) {
			c.Fatalf("round %d: after the echo: %v", i, err)
		}
		link.Close()
	}
	if st, err := c.Instance().Stats(); err == nil {
		c.Logf("stale results dropped by the reactor: %d", st.Counters.StaleResults)
	}
}
