package cases

import (
	"fmt"

	"github.com/reactorlab/reactorlab/conformance"
)

// p2Case is P2: no completion is lost.
//
// It would have caught: a completion queue that overflowed while the
// loop waited in a way that never flushed it, leaving connections
// unanswered (tokio-rs/io-uring#302: tcp_echo's connections time out
// under load once the CQ overflows; tokio-rs/tokio#8277: a hang until
// the overflow is flushed; libuv/libuv#3991: overflow not handled in
// libuv's ring; axboe/liburing#705: overflowed completions never
// flushed while new submissions keep the CQ full).
func p2Case() conformance.Case {
	b := p2Plan
	return conformance.Case{
		ID:    "P2",
		Title: "no completion is lost",
		Claim: fmt.Sprintf("%d connections opened first, then each writes %d frames of %d B in %d writes at the same moment (%d writes, each a segment that a completion-model server reads as a completion of its own, and as many sends: far more completions at once than a small completion queue holds): every frame is answered, in order, on every connection, and then each connection's one frame more is answered too (a completion lost at the burst's end leaves a connection never answered again)",
			b.conns, b.writes*b.frames, b.size, b.writes, b.conns*b.writes),
		Bound:    fmt.Sprintf("each connection's next echoed bytes within %v of the previous ones: a completion the kernel holds past a full queue is delivered at the loop's next wait, so a stall of seconds is one that waits for a completion the loop never takes", echoBound),
		PeerBugs: []string{"liburing-overflow-ignored"},
		Run:      runP2,
	}
}

// p2Plan is P2's burst: many small writes on many connections.
var p2Plan = burstPlan{conns: 128, writes: 8, frames: 1, size: 64}

func runP2(c *conformance.C) {
	r := runBurst(c, p2Plan, 1, echoBound)
	reportBurst(c, p2Plan, r)
}
