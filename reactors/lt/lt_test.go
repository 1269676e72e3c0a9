//go:build linux

package lt_test

import (
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/lt"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
)

func TestEndToEnd(t *testing.T) {
	cfg := reactors.DefaultConfig()
	stats := reactortest.EndToEnd(t, lt.New, cfg)
	t.Logf("counters: %+v", stats.Counters)
}

// TestUnreadSocketDataIsReportedAgain cuts every turn at 64 bytes (less
// than one 96-byte frame) and sends 100 frames in one write: each turn
// ends with the socket still readable and no complete frame buffered, so
// lt does not requeue; every frame must still be echoed, because the
// level-triggered kernel reports the unread data again.
func TestUnreadSocketDataIsReportedAgain(t *testing.T) {
	const burst = 100
	cfg := reactors.DefaultConfig()
	cfg.Budgets.Bytes = 64
	r := reactortest.Start(t, reactors.LT, cfg)
	c := reactortest.DialBurst(t, r, burst)
	if _, err := c.RecvCount(burst, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	st := reactortest.SettledCounters(r, burst, 5*time.Second)
	if st.ByteBudgetHits < burst {
		t.Fatalf("%d byte-budget hits for %d frames of 96 bytes under a 64-byte budget: turns were not cut", st.ByteBudgetHits, burst)
	}
	if st.Requeues != 0 {
		t.Errorf("lt requeued %d times: only complete buffered frames need the ready queue", st.Requeues)
	}
}
