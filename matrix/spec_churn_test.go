package matrix

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestChurnAndLeadFields: churn_rate, churn_burst, churn_max and
// hot_lead reach the load generator's configuration, a churn-only cell is
// valid, the description names the churn with loadgen's defaults
// written out, and the manifest lists the fields only where set.
func TestChurnAndLeadFields(t *testing.T) {
	s, err := Parse([]byte("name: c\nbaseline: {reactor: lt, churn_rate: 2000, duration: 1s}\n" +
		"factors:\n  - {name: churn_burst, values: [4]}\n  - {name: churn_max, values: [64]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Expand()
	base := cells[0]
	_, lc, err := base.Configs()
	if err != nil {
		t.Fatal(err)
	}
	if lc.ChurnRate != 2000 || lc.ChurnBurst != 0 || lc.ChurnMax != 0 || lc.HotLead != 0 {
		t.Errorf("baseline load %+v", lc)
	}
	if d := base.Describe(); !strings.Contains(d, "churn 2000 connections/s in bursts of 1 (at most 256 open)") {
		t.Errorf("baseline described as %q", d)
	}
	info := base.Info().Config
	if info["churn_rate"] != "2000" || info["churn_burst"] != "" || info["hot_lead"] != "" {
		t.Errorf("baseline manifest %v: want churn_rate alone", info)
	}
	if _, lc, _ := cells[1].Configs(); lc.ChurnBurst != 4 {
		t.Errorf("churn_burst cell: load %+v", lc)
	}
	if _, lc, _ := cells[2].Configs(); lc.ChurnMax != 64 || cells[2].Info().Config["churn_max"] != "64" {
		t.Errorf("churn_max cell: load %+v, manifest %v", lc, cells[2].Info().Config)
	}

	lead, err := Parse([]byte("name: l\nbaseline: {reactor: lt, hot: 1, inflight: 4, steady: 1, rate: 100, duration: 1s}\n" +
		"factors:\n  - {name: hot_lead, values: [500ms]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := lead.Expand()[1]
	if _, lc, _ := c.Configs(); lc.HotLead != 500*time.Millisecond || !strings.Contains(c.Describe(), "hot lead 500ms") {
		t.Errorf("hot_lead cell: load %+v, described as %q", lc, c.Describe())
	}
}

// TestMultiLoopFields: loops, assign and exclusive reach the reactor's
// configuration as serve's flags set them; a design that does not take
// one is refused at the field, in the design's own words; a target
// refuses them as reactor-only.
func TestMultiLoopFields(t *testing.T) {
	s, err := Parse([]byte("name: m\nbaseline: {reactor: mainsub, loops: 3, assign: least-loaded, hot: 1, inflight: 1, duration: 1s}\n" +
		"factors:\n  - {name: assign, values: [round-robin, least-conns]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rc, _, err := s.Expand()[0].Configs()
	if err != nil || rc.Loops != 3 || rc.Assign != "least-loaded" {
		t.Errorf("mainsub cell: loops %d, assign %q, err %v", rc.Loops, rc.Assign, err)
	}
	if d := s.Expand()[0].Describe(); !strings.Contains(d, "3 loops") || !strings.Contains(d, "assign least-loaded") {
		t.Errorf("described as %q", d)
	}
	if _, err := Parse([]byte("name: x\nbaseline: {reactor: shared, loops: 2, exclusive: 'off', hot: 1, inflight: 1, duration: 1s}\n")); err != nil {
		t.Errorf("shared with exclusive off refused: %v", err)
	}
	for _, tc := range []struct{ name, spec, want string }{
		{"loops on a one-loop design", "name: x\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s, loops: 4}\n", "line 2: loops: "},
		{"loops in a factor", "name: x\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\nfactors:\n  - {name: loops, values: [4]}\n", "line 4: factors[0].values[0] (loops): invalid reactor configuration: loops = 4: lt runs one data loop"},
		{"assign on shared", "name: x\nbaseline: {reactor: shared, hot: 1, inflight: 1, duration: 1s, assign: least-conns}\n", "line 2: assign: "},
		{"exclusive off on mainsub", "name: x\nbaseline: {reactor: mainsub, hot: 1, inflight: 1, duration: 1s, exclusive: 'off'}\n", "line 2: exclusive: "},
		{"bad assign", "name: x\nbaseline: {reactor: mainsub, hot: 1, inflight: 1, duration: 1s, assign: random}\n", `line 2: assign: "random"`},
		{"bad exclusive", "name: x\nbaseline: {reactor: shared, hot: 1, inflight: 1, duration: 1s, exclusive: maybe}\n", `line 2: exclusive: "maybe"`},
		{"loops with a target", "name: x\nbaseline: {target: {cmd: ./srv}, hot: 1, inflight: 1, duration: 1s, loops: 2}\n", "line 2: loops: reactor-only with a target"},
	} {
		_, err := Parse([]byte(tc.spec))
		if err == nil || !errors.Is(err, ErrSpec) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error starting %q", tc.name, err, tc.want)
		}
	}
}

// TestChurnFieldErrors: each churn and lead refusal names its line and
// field, in the load generator's words where it is the one refusing; a
// refusal of loadgen's loops names loadgen_loops, not the reactor's loops.
func TestChurnFieldErrors(t *testing.T) {
	const base = "name: x\nbaseline:\n  reactor: lt\n  hot: 1\n  inflight: 1\n  duration: 1s\n"
	for _, tc := range []struct{ name, extra, want string }{
		{"churn rate not a number", "  churn_rate: lots\n", `line 7: churn_rate: "lots" is not a rate (accepted: a number >= 0 of connections/s)`},
		{"churn rate too high", "  churn_rate: 2e5\n", "line 7: churn_rate: churn-rate = 200000 (accepted: 0 (no churn) or in (0, 100000] connections/s)"},
		{"burst without churn", "  churn_burst: 4\n", "line 7: churn_burst: churn-burst = 4 (accepted: 0 without churn-rate)"},
		{"cap without churn", "  churn_max: 4\n", "line 7: churn_max: churn-max = 4 (accepted: 0 without churn-rate)"},
		{"cap below burst", "  churn_rate: 100\n  churn_burst: 8\n  churn_max: 4\n", "line 9: churn_max: churn-max = 4 (accepted: >= churn-burst = 8"},
		{"negative burst", "  churn_rate: 100\n  churn_burst: -1\n", `line 8: churn_burst: "-1" is not a count`},
		{"lead too long", "  hot_lead: 1m\n", "line 7: hot_lead: hot-lead = 1m0s (accepted: 0 (no lead) or in (0, 10s])"},
		{"lead not a duration", "  hot_lead: 3\n", `line 7: hot_lead: "3" is not a duration`},
		{"loadgen loops", "  loadgen_loops: 2\n", "line 7: loadgen_loops: loops = 2"},
	} {
		_, err := Parse([]byte(base + tc.extra))
		if err == nil || !errors.Is(err, ErrSpec) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant an error starting %q", tc.name, err, tc.want)
		}
	}
	if _, err := Parse([]byte("name: x\nbaseline: {reactor: lt, churn_rate: 100, duration: 1s}\n")); err != nil {
		t.Errorf("a churn-only baseline refused: %v", err)
	}
}

// TestControlConnsField: control reaches the load generator as its count
// of control connections, prints as its effective value (absent is 1, and
// the manifest leaves it out), and is refused without control probes or
// outside 1..MaxSources, naming the field.
func TestControlConnsField(t *testing.T) {
	s, err := Parse([]byte("name: c\nbaseline: {reactor: lt, hot: 1, inflight: 4, control_every: 10ms, duration: 1s}\n" +
		"factors:\n  - {name: control, values: [4]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells := s.Expand()
	if _, lc, _ := cells[0].Configs(); lc.Control != 0 || cells[0].Info().Config["control"] != "" {
		t.Errorf("baseline: load control %d, manifest %v: want neither", lc.Control, cells[0].Info().Config)
	}
	_, lc, _ := cells[1].Configs()
	if lc.Control != 4 || cells[1].Info().Config["control"] != "4" || !strings.Contains(cells[1].Describe(), "on each of 4 connections") {
		t.Errorf("control cell: load control %d, manifest %v, described as %q", lc.Control, cells[1].Info().Config, cells[1].Describe())
	}
	for _, bad := range []struct{ baseline, want string }{
		{"{reactor: lt, hot: 1, inflight: 4, control: 2, duration: 1s}", "control: control connections without control probes"},
		{"{reactor: lt, control_every: 10ms, control: 0, duration: 1s}", `control: "0" is not a number of control connections`},
		{"{reactor: lt, control_every: 10ms, control: many, duration: 1s}", `control: "many" is not a number of control connections`},
	} {
		_, err := Parse([]byte("name: c\nbaseline: " + bad.baseline + "\n"))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("baseline %s: got %v, want %q", bad.baseline, err, bad.want)
		}
	}
}
