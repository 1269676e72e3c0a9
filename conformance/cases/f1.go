package cases

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/faults"
)

// f1Case is F1: a frame that arrives in pieces, split anywhere, is echoed
// intact and in order.
func f1Case() conformance.Case {
	return conformance.Case{
		ID:         "F1",
		Title:      "fragmented frames",
		Claim:      "a frame that arrives in pieces (split at every byte, and at chosen points around the header, with pauses between pieces) is echoed intact and in order",
		WireFaults: []string{"half-packets"},
		Bound:      fmt.Sprintf("each echo within %v (a complete frame is served within one round: that is hundreds of rounds)", echoBound),
		Run:        runF1,
	}
}

func runF1(c *conformance.C) {
	p := dial(c, "conn 1", c.Instance().Addr())
	// Tiny frames split at every byte, then header-straddling splits of
	// larger frames, each piece a separate write after a 1 ms pause so the
	// server sees reads that end inside a header and inside a payload.
	tiny := dataFrames(1, 4, 0, 1, 3, 8)
	mixed := make([][]byte, 0, 24)
	sizes := []int{1, 31, 32, 33, 100, 1000, 4095, 4096, 65535, 65536, 200 << 10}
	for i := 0; i < 24; i++ {
		mixed = append(mixed, dataFrame(1, uint64(4+i), sizes[i%len(sizes)]))
	}
	plan := faults.HalfPackets{Every: 1, Delay: time.Millisecond}.Apply(faults.Writes(tiny...))
	plan = append(plan, faults.HalfPackets{Points: []int{1, 4, 5, 31, 32, 33, 1000, 65536}, Delay: time.Millisecond}.Apply(faults.Writes(mixed...))...)
	c.Logf("sent 28 frames (1 B .. 200 KiB) in %d pieces", len(plan))
	errc := playAsync(c, p, plan)
	all := append(tiny, mixed...)
	for i, f := range all {
		p.expectEcho(c, 1, uint64(i), payloadLen(f), echoBound)
	}
	if err := <-errc; err != nil {
		c.Fatalf("sending: %v", err)
	}
}
