//go:build linux

package loadgen

import (
	"testing"
	"time"
)

// TestProgressMergerSums: a boundary is sent once every running loop has
// reported it, as the sum of their reports; a boundary one loop skipped is
// forgotten once a later one is sent; a loop that has ended counts with
// its last report (its counts, at no rate), so the sums never go back and
// the reports go on without it.
func TestProgressMergerSums(t *testing.T) {
	out := make(chan Progress, 16)
	m := newProgressMerger(2, out)
	go m.run()
	defer m.close()
	report := func(loop int, boundary int64, sent uint64, rate float64) {
		m.in <- loopProgress{loop: loop, boundary: boundary, p: Progress{Elapsed: time.Duration(boundary), Measuring: true, Sent: sent, Echoed: sent, Rate: rate}}
	}
	next := func(what string) Progress {
		t.Helper()
		select {
		case p := <-out:
			return p
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: no report", what)
		}
		return Progress{}
	}
	none := func(what string) {
		t.Helper()
		select {
		case p := <-out:
			t.Fatalf("%s: a report %+v, want none yet", what, p)
		case <-time.After(50 * time.Millisecond):
		}
	}

	report(0, 100, 10, 1000)
	none("boundary 100 from loop 0 only")
	report(1, 100, 5, 500)
	if p := next("boundary 100 from both"); p.Sent != 15 || p.Rate != 1500 || p.Elapsed != 100 {
		t.Errorf("boundary 100: %+v, want sent 15 at 1500/s", p)
	}
	report(0, 200, 20, 1000) // loop 1 skips 200
	report(0, 300, 30, 1000)
	report(1, 300, 15, 1000)
	if p := next("boundary 300"); p.Sent != 45 || p.Elapsed != 300 {
		t.Errorf("boundary 300: %+v, want sent 45 (200 skipped by loop 1, forgotten)", p)
	}
	none("nothing left of 200")
	m.in <- loopProgress{loop: 1, ended: true}
	report(0, 400, 40, 1000)
	if p := next("boundary 400 with loop 1 ended"); p.Sent != 55 || p.Rate != 1000 {
		t.Errorf("boundary 400: %+v, want loop 1's last 15 added to loop 0's 40, at loop 0's rate", p)
	}
}
