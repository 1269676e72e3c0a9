//go:build linux

package reactors_test

import (
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
)

// With Config.Stats off the loops record no histogram and still count
// their events and frames; on, every round is in the round histogram.
func TestStatsOffRecordsNoHistograms(t *testing.T) {
	for _, st := range []reactors.StatsMode{reactors.StatsOn, reactors.StatsOff} {
		t.Run(string(st), func(t *testing.T) {
			cfg := reactors.DefaultConfig()
			cfg.Stats = st
			r := startBench(t, reactors.LT, cfg)
			if err := dialEcho(t, r, 2).pump(1000); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Stop(); err != nil {
				t.Fatal(err)
			}
			s, err := r.Wait()
			if err != nil {
				t.Fatal(err)
			}
			rounds := s.Histograms[reactors.HistRound].Count
			rotations := s.Histograms[reactors.HistRotation].Count
			t.Logf("stats %s: %d rounds counted, %d in the round histogram, %d rotations recorded, %d epoll_waits", st, s.Counters.Rounds, rounds, rotations, s.Counters.EpollWaits)
			if s.Counters.Rounds == 0 || s.Counters.EpollWaits == 0 {
				t.Errorf("counters not kept: %+v", s.Counters)
			}
			switch {
			case st == reactors.StatsOff && (rounds != 0 || rotations != 0):
				t.Errorf("stats off, yet %d rounds and %d rotations recorded", rounds, rotations)
			case st == reactors.StatsOn && (rounds == 0 || rotations == 0):
				t.Errorf("stats on, yet %d rounds and %d rotations recorded", rounds, rotations)
			}
		})
	}
}

func TestStatsModeIsValidated(t *testing.T) {
	cfg := reactors.DefaultConfig()
	cfg.Stats = "maybe"
	if err := cfg.Validate(); err == nil {
		t.Fatal("stats=maybe accepted")
	} else {
		t.Log(err)
	}
}
