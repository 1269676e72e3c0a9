package conformance

import (
	"time"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/wire"
)

// f3Case is F3: frames of exactly the maximum size, and one byte less, are
// accepted and echoed intact.
func f3Case() Case {
	return Case{
		ID:    "F3",
		Title: "frame near the size limit",
		Claim: "frames of exactly the maximum size and one byte less are accepted and echoed intact (each needs many reads and writes)",
		Bound: "each echo within 10 s (2 MiB over loopback takes milliseconds)",
		Run:   runF3,
	}
}

func runF3(c *C) {
	limit := maxFrame(c)
	p := c.dial("conn 1", c.Instance().Addr())
	sizes := []int{limit - wire.HeaderSize, limit - wire.HeaderSize - 1}
	frames := [][]byte{dataFrame(1, 0, sizes[0]), dataFrame(1, 1, sizes[1])}
	c.Logf("frame limit %d B (whole frame); sending frames of %d and %d B", limit, len(frames[0]), len(frames[1]))
	errc := playAsync(c, p, faults.Writes(frames...))
	for i, n := range sizes {
		p.expectEcho(c, 1, uint64(i), n, 10*time.Second)
	}
	if err := <-errc; err != nil {
		c.Fatalf("sending: %v", err)
	}
}
