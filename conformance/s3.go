package conformance

import (
	"github.com/reactorlab/reactorlab/reactors"
)

// s3Case is S3: results coming back from worker threads are never lost
// while the loop sleeps between eventfd wakeups.
func s3Case() Case {
	return Case{
		ID:    "S3",
		Title: "cross-thread tasks never lost while the loop sleeps",
		Claim: "with callbacks on worker threads and the ingress budget at 4, every result of a 300-frame burst comes back though the loop sleeps between eventfd wakeups (no periodic tick to paper over a lost one)",
		Bound: "each echo within 2 s of the previous one",
		Needs: NeedReference,
		Setup: Setup{Tweak: func(d reactors.Design, cfg *reactors.Config) {
			withPool(d, cfg, 2)
			cfg.Timer = reactors.TimerDeadline
			cfg.Budgets.Ingress = 4
		}},
		Run: runS3,
	}
}

func runS3(c *C) {
	if c.Reference().Config.Workers == 0 {
		c.Skipf("%s runs callbacks on its own threads: no offload pool, no cross-thread results", c.Reference().Design)
	}
	runR1(c)
}
