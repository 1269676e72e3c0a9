package conformance

import (
	"fmt"
	"sync"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/wire"
)

func schedulingCases() []Case {
	return []Case{{
		ID:      "S1",
		Title:   "a hot source does not starve the others",
		Claim:   "while two hot connections keep 2 MiB of costly frames queued, four light connections doing one round trip every 10 ms are each served within the bound",
		Mutants: []string{"no-budget"},
		Bound:   "longest light round trip ≤ max(250 ms, 20 × the round the budgets allow: each hot turn ≤ min(input budget, first clock check past the time budget) frames × 200 µs)",
		Setup:   Setup{Tweak: hotTweak},
		Run:     runS1,
	}, {
		ID:      "S2",
		Title:   "control latency under hot data",
		Claim:   "PINGs on the control address every 10 ms are answered within the bound while two hot data connections saturate the reactor",
		Mutants: []string{"no-budget"},
		Bound:   "longest PING round trip ≤ the S1 bound (flat designs serve the control source as one more source per round; prio designs sooner)",
		Needs:   NeedControl,
		Setup:   Setup{Tweak: hotTweak},
		Run:     runS2,
	}, {
		ID:      "S3",
		Title:   "cross-thread tasks never lost while the loop sleeps",
		Claim:   "with callbacks on worker threads and the ingress budget at 4, every result of a 300-frame burst comes back though the loop sleeps between eventfd wakeups (no periodic tick to paper over a lost one)",
		Mutants: []string{"lost-wakeup"},
		Bound:   "each echo within 2 s of the previous one",
		Needs:   NeedReference,
		Setup: Setup{Tweak: func(d reactors.Design, cfg *reactors.Config) {
			if d != reactors.OneShot {
				cfg.Workers = 2
			}
			cfg.Timer = reactors.TimerDeadline
			cfg.Budgets.Ingress = 4
		}},
		Run: runS3,
	}}
}

// probe does round trips of one 64 B frame every 10 ms on p until stop is
// closed and returns the longest round trip.
func probe(p *peer, kind wire.Kind, token uint64, stop <-chan struct{}) (time.Duration, int, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var worst time.Duration
	n := 0
	for seq := uint64(0); ; seq++ {
		select {
		case <-stop:
			return worst, n, nil
		case <-tick.C:
		}
		payload := make([]byte, 64)
		fill(payload, token, seq)
		sent := time.Now()
		if _, err := p.link.Write(wire.AppendFrame(nil, kind, 0, token, seq, monoNow(), payload)); err != nil {
			return worst, n, err
		}
		g, err := p.next(10 * time.Second)
		if err != nil {
			return worst, n, fmt.Errorf("round trip %d: %w", seq, err)
		}
		if g.h.Kind != kind || g.h.Token != token || g.h.Seq != seq {
			return worst, n, fmt.Errorf("round trip %d: got %s", seq, g)
		}
		worst = max(worst, time.Since(sent))
		n++
	}
}

// boundFor derives the hot-load bound for the instance.
func boundFor(c *C, light int) time.Duration {
	var b time.Duration
	var why string
	if ref := c.Reference(); ref != nil {
		b, why = hotBound(ref, light)
	} else {
		b, why = blackBoxBound(light)
	}
	c.Logf("bound: %s", why)
	return b
}

// underHotLoad runs probes (one per peer) for 1.5 s under the hot load and
// fails the case if any round trip exceeds bound.
func underHotLoad(c *C, peers []*peer, kind wire.Kind, bound time.Duration) {
	h := startHot(c, c.Instance().Addr())
	stop := make(chan struct{})
	type res struct {
		worst time.Duration
		n     int
		err   error
	}
	results := make([]res, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, n, err := probe(p, kind, uint64(i+1), stop)
			results[i] = res{w, n, err}
		}()
	}
	timer := time.NewTimer(1500 * time.Millisecond)
	select {
	case <-timer.C:
	case <-c.Context().Done():
	}
	close(stop)
	wg.Wait()
	echoed := h.echoed.Load()
	h.stop()
	if err := h.Err(); err != nil {
		c.Fatalf("hot load: %v", err)
	}
	c.Evidencef("hot connections: %d frames echoed in 1.5 s", echoed)
	for i, r := range results {
		c.Evidencef("%s %d: %d round trips, longest %v", peers[i].name, i+1, r.n, r.worst.Round(time.Microsecond))
		if r.err != nil {
			c.Errorf("%s: %v", peers[i].name, r.err)
		}
		if r.worst > bound {
			c.Errorf("%s waited %v for an answer under hot load (bound %v)", peers[i].name, r.worst.Round(time.Millisecond), bound)
		}
	}
	if c.Failed() {
		if f := c.Stop(); f.Stats != nil {
			if hs, ok := f.Stats.Histograms[reactors.HistRotation]; ok {
				c.Evidencef("rotation interval: p99 %v, max %v", time.Duration(hs.P99), time.Duration(hs.Max))
			}
		}
	}
}

func runS1(c *C) {
	const light = 4
	bound := boundFor(c, light)
	var peers []*peer
	for i := 0; i < light; i++ {
		peers = append(peers, c.dial("light conn", c.Instance().Addr()))
	}
	underHotLoad(c, peers, wire.KindData, bound)
}

func runS2(c *C) {
	bound := boundFor(c, 1)
	p := c.dial("control conn", c.Instance().ControlAddr())
	underHotLoad(c, []*peer{p}, wire.KindPing, bound)
}

func runS3(c *C) {
	if c.Reference().Config.Workers == 0 {
		c.Skipf("%s runs callbacks on its own threads: no offload pool, no cross-thread results", c.Reference().Design)
	}
	runR1(c)
}
