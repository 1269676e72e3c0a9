//go:build linux

package matrix

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestProactorSuite: the proactor suite parses into its ten experiments,
// each a baseline on lt whose one cell is uring: ping-pong (1 in flight)
// and pipelined (16) at 1, 50, 300 and 1,000 hot connections, and the
// open loop on 50 steady sources at two rates; every planned run's cell
// is one the harness accepts, each run is 3 s after a 1 s warm-up,
// repeated 4 times (the fewest that let one cell's report give a
// verdict), the whole fits in 10 minutes, the header says why the
// multi-loop pair is not here, and the nightly suite does not run it.
func TestProactorSuite(t *testing.T) {
	text, err := EmbeddedText("proactor")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := ParseSuite([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, c := range []int{1, 50, 300, 1000} {
		want[fmt.Sprintf("proactor-pingpong-%d", c)] = fmt.Sprintf("hot %d × 1", c)
		want[fmt.Sprintf("proactor-pipelined-%d", c)] = fmt.Sprintf("hot %d × 16", c)
	}
	want["proactor-open-30"] = "steady 50 at 30000"
	want["proactor-open-70"] = "steady 50 at 70000"
	if len(specs) != len(want) {
		t.Fatalf("%d specs, want %d", len(specs), len(want))
	}
	for _, s := range specs {
		w, ok := want[s.Name]
		if !ok {
			t.Errorf("unexpected spec %s", s.Name)
			continue
		}
		b := s.Baseline
		load := fmt.Sprintf("hot %d × %d", b.Load.Hot, b.Load.InFlight)
		if b.Load.Steady > 0 {
			load = fmt.Sprintf("steady %d at %g", b.Load.Steady, b.Load.Rate)
		}
		var ids []string
		for _, c := range s.Expand()[1:] {
			ids = append(ids, c.ID)
		}
		if got := strings.Join(ids, " "); got != "reactor=uring" || b.Target.Design() != "lt" || load != w {
			t.Errorf("%s: baseline %s with %s, cells %q; want lt with %s, %q", s.Name, b.Target, load, got, w, "reactor=uring")
		}
		if s.Repeats != 4 || b.Load.Duration != 3*time.Second || b.Load.Warmup != time.Second {
			t.Errorf("%s: %d repeats of %v after %v; want 4 of 3s after 1s", s.Name, s.Repeats, b.Load.Duration, b.Load.Warmup)
		}
		if _, err := harnessCells(s.Plan(Shard{}), Options{Spec: s, Dir: t.TempDir()}); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	if est := Estimate(specs, Shard{}); est > 10*time.Minute {
		t.Errorf("estimated %v, over 10 minutes", est)
	}
	if !strings.Contains(text, "multi-loop pair") || !strings.Contains(text, "--cpus server=0-3,loadgen=4-7") {
		t.Errorf("the header does not say why the multi-loop pair is not here, or how to add it on a bigger machine")
	}
	nightly, err := EmbeddedText("nightly")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(nightly, "name: proactor") {
		t.Errorf("the nightly suite runs proactor")
	}
}
