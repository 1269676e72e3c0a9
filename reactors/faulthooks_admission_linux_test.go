//go:build linux

package reactors_test

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// The admission-limit detector (faulthooks_linux_test.go has the rows).

// admissionLimit is a bucket of 8 tokens at 1,000 frames a second,
// engaged after one saturated round, with 200 µs frames.
func admissionLimit(cfg *reactors.Config) {
	cfg.Admission = "token-bucket:1000/8"
	cfg.AdmissionAfter = 1
	cfg.Callback = "fixed:200us"
}

// detectIgnoredAdmission writes 400 frames in one burst: the first turn
// ends on the input budget (a saturated round), the limit engages, and of
// the ~80 ms of work the burst brings, the bucket admits about 90 frames;
// the rest must come back as REJECT, every frame answered once.
func detectIgnoredAdmission(r *reactors.Reactor) error {
	const n = 400
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SendBurst(1, n, make([]byte, 32)); err != nil {
		return err
	}
	rejects := 0
	for i := range n {
		h, _, err := c.Recv(5 * time.Second)
		if err != nil {
			return fmt.Errorf("answer %d of %d: %w", i+1, n, err)
		}
		if h.Kind == wire.KindReject {
			rejects++
		}
	}
	if rejects == 0 {
		return fmt.Errorf("%d frames of 200 µs in one burst against a 1000/s bucket of 8, past saturation: no REJECT, the limit refused nothing", n)
	}
	reactortest.Settled(r, 20*time.Millisecond, 2*time.Second) // published counters lag the loop
	if got := r.Stats().Counters.AdmissionRejects; got != uint64(rejects) {
		return fmt.Errorf("%d REJECTs received, the reactor counts %d admission rejects", rejects, got)
	}
	return nil
}
