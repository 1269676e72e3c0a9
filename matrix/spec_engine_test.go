package matrix

import (
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/loadgen"
)

// TestLoadgenEngineField: loadgen_engine reaches the load generator as its
// engine, is a factor like loadgen_loops (its cell named by it, the
// manifest keeping it only where it is not the default epoll, which
// leaving it out means), and a value the load generator refuses is
// refused at its line, in its words.
func TestLoadgenEngineField(t *testing.T) {
	s, err := Parse([]byte("name: e\nbaseline: {reactor: lt, hot: 1, inflight: 4, duration: 1s}\n" +
		"factors:\n  - {name: loadgen_engine, values: [uring]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Expand()
	if len(cells) != 2 {
		t.Fatalf("%d cells, want the baseline and one", len(cells))
	}
	if _, lc, _ := cells[0].Configs(); lc.Engine != "" || cells[0].Info().Config["loadgen_engine"] != "" {
		t.Errorf("baseline: engine %q, manifest %v: want the default, left out", lc.Engine, cells[0].Info().Config)
	}
	_, lc, _ := cells[1].Configs()
	if lc.Engine != loadgen.EngineUring || cells[1].Info().Config["loadgen_engine"] != "uring" || cells[1].ID != "loadgen_engine=uring" ||
		!strings.Contains(cells[1].Describe(), "load generator engine uring") || strings.Contains(cells[0].Describe(), "engine") {
		t.Errorf("engine cell %q: engine %q, manifest %v, described as %q (the baseline as %q)", cells[1].ID, lc.Engine, cells[1].Info().Config,
			cells[1].Describe(), cells[0].Describe())
	}
	for _, bad := range []struct{ extra, want string }{
		{"  loadgen_engine: kqueue\n", `line 6: loadgen_engine: "kqueue" (accepted: epoll or uring; leave it out for epoll)`},
		{"  loadgen_engine: uring\n  hot_lead: 1s\n", "loadgen-engine = uring: hot-lead is the epoll engine's only"},
	} {
		_, err := Parse([]byte("name: e\nbaseline:\n  reactor: lt\n  hot: 1\n  inflight: 4\n" + bad.extra + "  duration: 1s\n"))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: got %v, want %q", bad.extra, err, bad.want)
		}
	}
}
