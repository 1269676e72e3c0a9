package cases

import (
	"fmt"

	"github.com/reactorlab/reactorlab/conformance"
)

// The completion-model group (P): what a server must keep that a proactor
// (io_uring: the loop submits reads and writes, the kernel does them and
// reports each result as a completion) can lose in ways a readiness loop
// cannot: buffers the kernel takes from a shared pool, completions
// queued in a ring of fixed size, results that arrive after their
// descriptor was closed, operations still in the kernel at teardown.
// Every claim holds for any server, so each case runs on black boxes and
// on the epoll designs too, which pass by construction.

// p1Case is P1: running out of provided buffers is backpressure, not
// failure.
//
// It would have caught: a multishot recv's -ENOBUFS taken as the end of
// the stream or a connection error (MDA2AV/ioxide#93: "any cqe.res <= 0
// … tear the connection down"; PADL/IORingSwift#9: ENOBUFS ended the
// receive stream for good), buffers never given back so the pool runs dry
// (frevib/io_uring-echo-server#11), and a ring marked exhausted that
// fell back to a slower path (netty/netty#14690, #14866).
func p1Case() conformance.Case {
	b := p1Plan
	return conformance.Case{
		ID:    "P1",
		Title: "running out of provided buffers is backpressure, not failure",
		Claim: fmt.Sprintf("%d connections opened first, then each writes %d frames of %d B in one write at the same moment (%.1f MiB arriving within milliseconds, more than a completion-model server's pool of provided receive buffers holds: liburing-echo's is 64 KiB): every connection is served, none is reset or ended early, every byte comes back in order, and then each connection's one frame more is answered too",
			b.conns, b.frames, b.size, float64(b.conns*b.perConn())/(1<<20)),
		Bound:    fmt.Sprintf("each connection's next echoed bytes within %v of the previous ones (a server out of buffers waits until one is given back: microseconds on an idle loop, never seconds); a black box's pool is not seen, so the case holds it to the claim whatever its buffers", echoBound),
		PeerBugs: []string{"liburing-enobufs-eof"},
		Run:      runP1,
	}
}

// p1Plan is P1's burst: hundreds of connections, 16 KiB and more each.
var p1Plan = burstPlan{conns: 200, writes: 1, frames: 8, size: 2 << 10}

func runP1(c *conformance.C) {
	r := runBurst(c, p1Plan, 1, echoBound)
	reportBurst(c, p1Plan, r)
}
