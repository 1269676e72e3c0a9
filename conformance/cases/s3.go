package cases

import (
	"fmt"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// s3Case is S3: results coming back from worker threads are never lost
// while the loop sleeps between eventfd wakeups.
func s3Case() conformance.Case {
	return conformance.Case{
		ID:    "S3",
		Title: "cross-thread tasks never lost while the loop sleeps",
		Claim: fmt.Sprintf("with callbacks on worker threads and the ingress budget at %d, every result of R1's %d-frame burst comes back though the loop sleeps between eventfd wakeups (no periodic tick to paper over a lost one)", s3Ingress, r1Frames),
		Bound: fmt.Sprintf("each echo within %v of the previous one", echoBound),
		Needs: conformance.NeedReference,
		Setup: conformance.Setup{Tweak: func(d reactors.DesignName, cfg *reactors.Config) {
			withPool(d, cfg, 2)
			cfg.Timer = reactors.TimerDeadline
			cfg.Budgets.Ingress = s3Ingress
		}},
		Run: runS3,
	}
}

// s3Ingress is S3's ingress budget: results taken from the workers a turn.
const s3Ingress = 4

func runS3(c *conformance.C) {
	if c.Reference().Config.Workers == 0 {
		c.Skipf("%s runs callbacks on its own threads: no offload pool, no cross-thread results", c.Reference().Design)
	}
	runR1(c)
}
