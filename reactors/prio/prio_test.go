//go:build linux

package prio_test

import (
	"sync"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/prio"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

func TestEndToEnd(t *testing.T) {
	cfg := reactors.DefaultConfig()
	stats := reactortest.EndToEnd(t, prio.New, cfg)
	t.Logf("counters: %+v", stats.Counters)
}

// TestDataBucketEndsWithinItsBudget saturates prio with frames of 50 µs of
// callback each, 8 connections keeping 32 frames buffered (one turn's
// input budget), and checks the length of its rounds. The data bucket
// must end within ClockEvery (16) frames of its 500 µs budget: a round is
// about 0.5 + 16 × 0.05 = 1.3 ms of data, plus the control bucket and the
// wait. A clock read every 16 *sources* instead would let the bucket run 8
// turns × 32 × 50 µs = 12.8 ms, every round that long. The median round
// must stay under 5 ms: four times the arithmetic, and well under 12.8.
func TestDataBucketEndsWithinItsBudget(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Callback = "50us"
	r := reactortest.Start(t, reactors.Prio, cfg)
	addr := r.Addr().String()
	const conns, inFlight = 8, 32
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := reactortest.Dial(addr, 5*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			token := uint64(i + 1)
			payload := make([]byte, 32)
			var seq uint64
			send := func() error {
				seq++
				reactortest.Payload(payload, token, seq)
				return c.Send(wire.KindData, token, seq, payload)
			}
			for range inFlight {
				if err := send(); err != nil {
					errs <- err
					return
				}
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Closed loop: one frame out for each echo in.
				if _, _, err := c.Recv(5 * time.Second); err != nil {
					errs <- err
					return
				}
				if err := send(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	// Let it run: 2 s of rounds (1 s with -short), hundreds of them however
	// long, and some 17,000 frames a second: the floors below (100 rounds,
	// 10,000 frames) hold in either.
	run := 2 * time.Second
	if testing.Short() {
		run = time.Second
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(run):
	}
	if _, err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	st, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	round := st.Histograms[reactors.HistRound]
	t.Logf("rounds: %d, p50 %v, p99 %v, max %v; time-budget hits %d, frames echoed %d",
		round.Count, time.Duration(round.P50), time.Duration(round.P99), time.Duration(round.Max),
		st.Counters.TimeBudgetHits, st.Counters.FramesEchoed)
	if round.Count < 100 || st.Counters.FramesEchoed < 10_000 {
		t.Fatalf("only %d rounds, %d frames: the reactor was not saturated", round.Count, st.Counters.FramesEchoed)
	}
	if p50 := time.Duration(round.P50); p50 > 5*time.Millisecond {
		t.Errorf("median round %v: the data bucket overran its 500 µs budget (want within ClockEvery frames of it)", p50)
	}
}
