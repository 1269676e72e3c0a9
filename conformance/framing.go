package conformance

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/wire"
)

func framingCases() []Case {
	return []Case{{
		ID:      "F1",
		Title:   "fragmented frames",
		Claim:   "a frame that arrives in pieces (split at every byte, and at chosen points around the header, with pauses between pieces) is echoed intact and in order",
		Mutants: []string{"drop-partial"}, WireFaults: []string{"half-packets"},
		Bound: "each echo within 2 s (a complete frame is served within one round; 2 s is hundreds of rounds)",
		Run:   runF1,
	}, {
		ID:      "F2",
		Title:   "coalesced frames",
		Claim:   "a thousand frames in one write, on two connections at once, are all echoed intact and in order",
		Mutants: []string{"no-drain"}, WireFaults: []string{"coalesced"},
		Bound: "each echo within 2 s of the previous one: the burst is 32 input budgets, each turn ends with work left and must be resumed without a new readiness event",
		Run:   runF2,
	}, {
		ID:      "F3",
		Title:   "frame near the size limit",
		Claim:   "frames of exactly the maximum size and one byte less are accepted and echoed intact (each needs many reads and writes)",
		Mutants: []string{"limit-off-by-one"},
		Bound:   "each echo within 10 s (2 MiB over loopback takes milliseconds)",
		Run:     runF3,
	}, {
		ID:      "F4",
		Title:   "over-size frame refused",
		Claim:   "a header declaring 256 MiB (limit 1 MiB) is answered with REJECT and the connection closed, without the server allocating the declared size, while another connection goes on being served",
		Mutants: []string{"no-frame-limit"}, WireFaults: []string{"over-size"},
		Bound: "REJECT and EOF within 2 s; server memory grows by less than 64 MiB (a quarter of the declared size)",
		Needs: NeedReference,
		Run:   runF4,
	}}
}

func runF1(c *C) {
	p := c.dial("conn 1", c.Instance().Addr())
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

func runF2(c *C) {
	const n = 1000
	errs := make(chan error, 2)
	for conn := uint64(1); conn <= 2; conn++ {
		p := c.dial(fmt.Sprintf("conn %d", conn), c.Instance().Addr())
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
