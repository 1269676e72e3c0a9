//go:build linux

package oneshot_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/oneshot"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
)

func TestEndToEnd(t *testing.T) {
	cfg := reactors.DefaultConfig()
	stats := reactortest.EndToEnd(t, oneshot.New, cfg)
	t.Logf("counters: %+v", stats.Counters)
}

// TestWorkersRearmWhatTheyServe runs 3 workers on 12 connections: there
// are 3 loop threads, every frame comes back, and every event was followed
// by a rearm (no missed ones), or connections would have fallen silent.
func TestWorkersRearmWhatTheyServe(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Threads = 3
	r := reactortest.Start(t, reactors.OneShot, cfg)
	if n := len(r.LoopThreads()); n != 3 {
		t.Fatalf("%d loop threads, want Config.Threads = 3", n)
	}
	if err := reactortest.Echo(r.Addr().String(), 12, reactortest.Sizes(rand.New(rand.NewPCG(1, 2)), 200), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	st := reactortest.SettledCounters(r, 12*200, 5*time.Second)
	if st.Rearms == 0 || st.MissedRearms != 0 {
		t.Fatalf("rearms %d, missed %d: want rearms and none missed", st.Rearms, st.MissedRearms)
	}
}

// TestRefusesAnOffloadPool: the workers are the pool.
func TestRefusesAnOffloadPool(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Workers = 2
	_, err := oneshot.New(cfg)
	if !errors.Is(err, reactors.ErrConfig) || !strings.Contains(err.Error(), "workers = 2") {
		t.Fatalf("oneshot with workers = 2: %v, want a configuration error naming workers", err)
	}
}
