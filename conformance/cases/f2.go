package cases

import (
	"errors"
	"fmt"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"

	"github.com/reactorlab/reactorlab/faults"
)

// f2Case is F2: a thousand frames in one write, on two connections at
// once, are all echoed intact and in order.
func f2Case() conformance.Case {
	input := reactors.DefaultBudgets().Input
	return conformance.Case{
		ID:         "F2",
		Title:      "coalesced frames",
		Claim:      fmt.Sprintf("%d frames in one write, on two connections at once, are all echoed intact and in order", f2Frames),
		WireFaults: []string{"coalesced"},
		Bound:      fmt.Sprintf("each echo within %v of the previous one: the burst is %d input budgets (at the default %d frames), each turn ends with work left and must be resumed without a new readiness event", echoBound, budgetsFor(f2Frames, input), input),
		Run:        runF2,
	}
}

// f2Frames is the frames each of F2's connections writes at once.
const f2Frames = 1000

// budgetsFor is how many budgets of budget units n units take: a burst of
// n frames (or bytes) is served in that many turns at least.
func budgetsFor(n, budget int) int { return (n + budget - 1) / budget }

func runF2(c *conformance.C) {
	const n = f2Frames
	errs := make(chan error, 2)
	for conn := uint64(1); conn <= 2; conn++ {
		p := dial(c, fmt.Sprintf("conn %d", conn), c.Instance().Addr())
		frames := dataFrames(conn, n, 16, 64, 100, 512, 7, 256)
		plan := faults.Coalesce{Frames: n}.Apply(faults.Writes(frames...))
		go func() {
			errc := playAsync(c, p, plan)
			for i, f := range frames {
				g, err := p.next(echoBound)
				if err != nil {
					errs <- fmt.Errorf("conn %d: %d of %d echoes, then: %w", conn, i, n, err)
					return
				}
				if why := checkEcho(g, conn, uint64(i), payloadLen(f)); why != "" {
					errs <- fmt.Errorf("conn %d: echo %d: %s (got %s)", conn, i, why, g)
					return
				}
			}
			errs <- <-errc
		}()
	}
	var failed error
	for i := 0; i < 2; i++ {
		failed = errors.Join(failed, <-errs)
	}
	if failed != nil {
		c.Evidencef("sent: each connection wrote %d DATA frames (7..512 B payloads) in one write", n)
		c.Fatalf("%v", failed)
	}
}
