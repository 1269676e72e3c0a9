//go:build linux

package matrix

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestProactorSuite: the proactor suite parses into its twelve
// experiments: ten a baseline on lt whose one cell is uring, ping-pong (1
// in flight) and pipelined (16) at 1, 50, 300 and 1,000 hot connections,
// and the open loop on 50 steady sources at two rates; and the
// multi-loop pair, a baseline on reuseport whose one cell is
// uring-reuseport, ping-pong and pipelined at 300, its loops left to the
// server's CPUs (none set). Every planned run's cell is one the harness
// accepts, each run is 3 s after a 1 s warm-up, repeated 4 times (the
// fewest that let one cell's report give a verdict), the whole fits in
// 10 minutes, the header says how the pair's loops meet the CPUs and how
// to give them one each, and the nightly suite does not run it.
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
	want["proactor-multiloop-pingpong-300"] = "hot 300 × 1"
	want["proactor-multiloop-pipelined-300"] = "hot 300 × 16"
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
		base, cell := "lt", "reactor=uring"
		if strings.HasPrefix(s.Name, "proactor-multiloop-") {
			base, cell = "reuseport", "reactor=uring-reuseport"
			if b.Loops != 0 {
				t.Errorf("%s: %d loops, want them left to the server's CPUs", s.Name, b.Loops)
			}
		}
		if got := strings.Join(ids, " "); got != cell || b.Target.Design() != base || load != w {
			t.Errorf("%s: baseline %s with %s, cells %q; want %s with %s, %q", s.Name, b.Target, load, got, base, w, cell)
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
	if !strings.Contains(text, "The multi-loop pair: reuseport") || !strings.Contains(text, "--cpus server=0-3,loadgen=4-7") {
		t.Errorf("the header does not say how the multi-loop pair's loops meet the CPUs, or how to give them one each on a bigger machine")
	}
	nightly, err := EmbeddedText("nightly")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(nightly, "name: proactor") {
		t.Errorf("the nightly suite runs proactor")
	}
}
