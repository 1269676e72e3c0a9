//go:build linux

package reactors_test

import (
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
)

// TestStarvedReceivesWaitForBuffers: a burst on hundreds of connections,
// far larger than the buffer ring, is echoed whole and in order, and the
// receives that ended with ENOBUFS are armed again no faster than buffers
// come back: at most max(1, b) a round, b the buffers the round gave back
// to the ring, so over the run EnobufsRearms <= RingBuffersReturned +
// Rounds. A loop that re-arms every starved receive each round arms
// hundreds into a ring just emptied by the first few, and each ends with
// ENOBUFS again at once. The 1-buffer row holds the rule's floor: a
// round that gave no buffer back still arms one, so the burst is served.
func TestStarvedReceivesWaitForBuffers(t *testing.T) {
	if err := reactors.ProbeCompletion(); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name                 string
		buffers, conns, size int // size: each frame's bytes; 8 frames a connection
	}{
		{"16-buffers-300-conns", 16, 300, 1024},
		{"1-buffer-40-conns", 1, 40, 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := reactors.DefaultConfig()
			cfg.Ring.Buffers, cfg.Ring.BufferSize = tc.buffers, 4096
			r := reactortest.Start(t, reactors.Uring, cfg)
			const frames = 8
			start := time.Now()
			if err := burstOnConns(r, tc.conns, frames, tc.size); err != nil {
				t.Fatal(err)
			}
			served := time.Since(start)
			reactortest.Settled(r, 20*time.Millisecond, 2*time.Second)
			c := r.Stats().Counters
			echoed := tc.conns * frames
			t.Logf("%d frames echoed in %v: %d re-arms after ENOBUFS (%.2f a frame), %d buffers given back, %d rounds, %d completions (%.2f a frame)",
				echoed, served.Round(time.Millisecond), c.EnobufsRearms, float64(c.EnobufsRearms)/float64(echoed),
				c.RingBuffersReturned, c.Rounds, c.Completions, float64(c.Completions)/float64(echoed))
			if c.EnobufsRearms == 0 {
				t.Fatalf("no receive was armed again after ENOBUFS (counters %+v): the burst did not exhaust the ring, so it proves nothing", c)
			}
			if bound := c.RingBuffersReturned + c.Rounds; c.EnobufsRearms > bound {
				t.Errorf("%d receives armed again after ENOBUFS, more than the %d buffers given back plus one a round for %d rounds (%d): starved receives were armed into a ring with no buffer for them",
					c.EnobufsRearms, c.RingBuffersReturned, c.Rounds, bound)
			}
		})
	}
}
