package conformance

import (
	"errors"
	"io"
	"runtime"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/wire"
)

// f4Case is F4: a header declaring far more than the frame limit is
// answered with REJECT and the connection closed, without the declared
// size allocated.
func f4Case() Case {
	return Case{
		ID:         "F4",
		Title:      "over-size frame refused",
		Claim:      "a header declaring 256 MiB (limit 1 MiB) is answered with REJECT and the connection closed, without the server allocating the declared size, while another connection goes on being served",
		WireFaults: []string{"over-size"},
		Bound:      "REJECT and EOF within 2 s; server memory grows by less than 64 MiB (a quarter of the declared size)",
		Needs:      NeedReference,
		Run:        runF4,
	}
}

func runF4(c *C) {
	const declared = 256 << 20
	inst := c.Instance()
	good := c.dial("good conn", inst.Addr())
	bad := c.dial("bad conn", inst.Addr())
	before := c.usage()
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
	after := c.usage()
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	if before.RSS >= 0 && after.RSS >= 0 {
		if grew := after.RSS - before.RSS; grew > 64<<20 {
			c.Fatalf("server RSS grew by %d MiB refusing the header", grew>>20)
		}
	} else if grew := ms1.TotalAlloc - ms0.TotalAlloc; grew > 64<<20 {
		// In-process target: the reactor allocates in this process.
		c.Fatalf("this process allocated %d MiB while the reactor refused the header", grew>>20)
	}
}
