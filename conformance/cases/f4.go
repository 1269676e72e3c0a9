package cases

import (
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/wire"
)

// f4Case is F4: a header declaring far more than the frame limit is
// answered with REJECT and the connection closed, without the declared
// size allocated.
func f4Case() conformance.Case {
	_, arithmetic := f4GrowthLimit()
	return conformance.Case{
		ID:         "F4",
		Title:      "over-size frame refused",
		Claim:      fmt.Sprintf("a header declaring %d MiB (limit %d MiB) is answered with REJECT and the connection closed, without the server allocating the declared size, while another connection goes on being served", f4Declared>>20, reactors.DefaultConfig().MaxFrame>>20),
		WireFaults: []string{"over-size"},
		Bound:      fmt.Sprintf("REJECT and EOF within %v; server memory grows by at most %s", echoBound, arithmetic),
		Needs:      conformance.NeedReference,
		Run:        runF4,
	}
}

// f4Declared is the frame size F4's header declares.
const f4Declared = 256 << 20

// f4GrowthLimit is the most the server's memory may grow while it refuses
// the over-size header: a quarter of the declared size, far more than a
// refusal needs and far less than allocating the frame takes.
func f4GrowthLimit() (limit int64, arithmetic string) {
	limit = f4Declared / 4
	return limit, fmt.Sprintf("a quarter of the %d MiB declared = %d MiB", f4Declared>>20, limit>>20)
}

func runF4(c *conformance.C) {
	const declared = f4Declared
	limit, arithmetic := f4GrowthLimit()
	inst := c.Instance()
	good := dial(c, "good conn", inst.Addr())
	bad := dial(c, "bad conn", inst.Addr())
	before := usage(c)
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	plan := faults.OverSize{Declared: declared}.Apply(nil)
	if err := faults.Play(c.Context(), bad.link, plan); err != nil {
		c.Fatalf("sending the over-size header: %v", err)
	}
	c.Evidencef("sent: one DATA header declaring a %d MiB frame (limit %d B), no payload", declared>>20, maxFrame(c))
	g, err := bad.next(echoBound)
	if err != nil || g.h.Kind != wire.KindReject {
		c.Evidencef("got: %v, error %v", g, err)
		c.Fatalf("over-size header not refused with REJECT within %v", echoBound)
	}
	if _, err := bad.next(echoBound); !errors.Is(err, io.EOF) {
		c.Fatalf("after REJECT the connection must close: got %v", err)
	}
	good.write(c, dataFrame(2, 0, 100))
	good.expectEcho(c, 2, 0, 100, echoBound)
	after := usage(c)
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	if before.RSS >= 0 && after.RSS >= 0 {
		if grew := after.RSS - before.RSS; grew > limit {
			c.Fatalf("server RSS grew by %d MiB refusing the header, more than %s", grew>>20, arithmetic)
		}
	} else if grew := ms1.TotalAlloc - ms0.TotalAlloc; grew > uint64(limit) {
		// In-process target: the reactor allocates in this process.
		c.Fatalf("this process allocated %d MiB while the reactor refused the header, more than %s", grew>>20, arithmetic)
	}
}
