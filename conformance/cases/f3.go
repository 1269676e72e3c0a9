package cases

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/wire"
)

// f3Case is F3: frames of exactly the maximum size, and one byte less, are
// accepted and echoed intact.
func f3Case() conformance.Case {
	return conformance.Case{
		ID:    "F3",
		Title: "frame near the size limit",
		Claim: "frames of exactly the maximum size and one byte less are accepted and echoed intact (each needs many reads and writes)",
		Bound: fmt.Sprintf("each echo within %v (%d MiB over loopback takes milliseconds)", f3EchoBound, 2*reactors.DefaultConfig().MaxFrame>>20),
		Run:   runF3,
	}
}

// f3EchoBound is how long each of F3's two near-limit frames may take to
// be echoed.
const f3EchoBound = 10 * time.Second

func runF3(c *conformance.C) {
	limit := maxFrame(c)
	p := dial(c, "conn 1", c.Instance().Addr())
	sizes := []int{limit - wire.HeaderSize, limit - wire.HeaderSize - 1}
	frames := [][]byte{dataFrame(1, 0, sizes[0]), dataFrame(1, 1, sizes[1])}
	c.Logf("frame limit %d B (whole frame); sending frames of %d and %d B", limit, len(frames[0]), len(frames[1]))
	errc := playAsync(c, p, faults.Writes(frames...))
	for i, n := range sizes {
		p.expectEcho(c, 1, uint64(i), n, f3EchoBound)
	}
	if err := <-errc; err != nil {
		c.Fatalf("sending: %v", err)
	}
}
