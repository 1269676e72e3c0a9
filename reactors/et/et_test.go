//go:build linux

package et_test

import (
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/et"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
)

func TestEndToEnd(t *testing.T) {
	cfg := reactors.DefaultConfig()
	stats := reactortest.EndToEnd(t, et.New, cfg)
	t.Logf("counters: %+v", stats.Counters)
}

// TestBudgetCutSourceIsServedWithoutANewEdge sends 200 frames in one write
// (one edge) to a reactor whose turn serves 2 frames: the rest must be
// served from the ready queue, with no further edge, or they wait forever.
// The NoDrain mutant (one read per edge, never requeued) must stall.
func TestBudgetCutSourceIsServedWithoutANewEdge(t *testing.T) {
	const burst = 200
	// 1 s without an echo is a stall (300 ms with -short, the wait the
	// mutant's run takes in full): a turn of 2 frames takes µs, and the
	// mutant's stall lasts for ever.
	stall := time.Second
	if testing.Short() {
		stall = 300 * time.Millisecond
	}
	run := func(t *testing.T, noDrain bool) (int, reactors.Counters) {
		cfg := reactors.DefaultConfig()
		cfg.Budgets.Input = 2
		cfg.Faults.NoDrain = noDrain
		r := reactortest.Start(t, reactors.ET, cfg)
		c := reactortest.DialBurst(t, r, burst)
		got, _ := c.RecvCount(burst, stall)
		return got, reactortest.SettledCounters(r, uint64(got), 5*time.Second)
	}
	got, st := run(t, false)
	if got != burst {
		t.Fatalf("correct et echoed %d of %d frames sent in one edge (requeues %d)", got, burst, st.Requeues)
	}
	if st.Requeues == 0 || st.InputBudgetHits == 0 {
		t.Fatalf("the input budget never cut a turn (hits %d, requeues %d): the test did not test the queue", st.InputBudgetHits, st.Requeues)
	}
	if got, _ := run(t, true); got == burst {
		t.Fatalf("the no-drain mutant echoed all %d frames: the test cannot tell a missing requeue", burst)
	}
}
