package matrix

import (
	"strconv"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/reactors"
)

// TestRingBuffersField: ring_buffers reaches a completion design as its
// provided buffer ring's count (serve --ring-buffers), is a factor like
// loops (its cell named by it, the manifest keeping it only where it is
// set, which leaving it out means the reactor's default), and is refused
// at its line, naming the field, where the reactor's validation refuses
// the count, where the design has no ring, and with a black-box target.
func TestRingBuffersField(t *testing.T) {
	s, err := Parse([]byte("name: rb\nbaseline: {reactor: uring-reuseport, loops: 2, hot: 1, inflight: 4, duration: 1s}\n" +
		"factors:\n  - {name: ring_buffers, values: [4, 256]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Expand()
	if len(cells) != 3 {
		t.Fatalf("%d cells, want the baseline and two", len(cells))
	}
	base, _, err := cells[0].Configs()
	if err != nil || base.Ring.Buffers != reactors.DefaultConfig().Ring.Buffers || cells[0].Info().Config["ring_buffers"] != "" || strings.Contains(cells[0].Describe(), "ring buffers") {
		t.Errorf("baseline: %d ring buffers (%v), manifest %v, described as %q: want the default, left out", base.Ring.Buffers, err, cells[0].Info().Config, cells[0].Describe())
	}
	for i, want := range []int{4, 256} {
		c := cells[i+1]
		rc, _, err := c.Configs()
		id := "ring_buffers=" + strconv.Itoa(want)
		if err != nil || rc.Ring.Buffers != want || c.ID != id || c.Info().Config["ring_buffers"] != strconv.Itoa(want) ||
			!strings.Contains(c.Describe(), strconv.Itoa(want)+" ring buffers a loop") || !strings.Contains(strings.Join(rc.Args(), " "), "--ring-buffers="+strconv.Itoa(want)) {
			t.Errorf("cell %q: %d ring buffers (%v), manifest %v, described as %q, serve args %q; want %s", c.ID, rc.Ring.Buffers, err, c.Info().Config, c.Describe(), rc.Args(), id)
		}
	}
	for _, bad := range []struct{ baseline, want string }{
		{"reactor: uring\n  ring_buffers: 48\n", "line 7: ring_buffers: invalid reactor configuration: ring-buffers = 48"},
		{"reactor: uring\n  ring_buffers: 65536\n", "line 7: ring_buffers: invalid reactor configuration: ring-buffers = 65536"},
		{"reactor: uring\n  ring_buffers: many\n", `line 7: ring_buffers: "many" is not a count`},
		{"reactor: lt\n  ring_buffers: 64\n", "line 7: ring_buffers: ring_buffers = 64: lt serves through no io_uring (accepted with uring, uring-reuseport, uring-mainsub)"},
		{"target: {cmd: './srv'}\n  ring_buffers: 64\n", "line 7: ring_buffers: reactor-only with a target"},
	} {
		_, err := Parse([]byte("name: rb\nbaseline:\n  hot: 1\n  inflight: 4\n  duration: 1s\n  " + bad.baseline))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: got %v, want %q", bad.baseline, err, bad.want)
		}
	}
}
