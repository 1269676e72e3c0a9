package matrix

import (
	"errors"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/target"
)

func mustParse(t testing.TB, path string) *Spec {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// structField maps each field of Settings, by Go name, to the spec field
// that sets it. It is written out here rather than taken from the
// package's table, so the tests do not trust the code they check.
var structField = map[string]string{
	"Target": "reactor", "Label": "reactor", // a {cmd, label} value sets both
	"Callback": "callback", "Budgets": "budgets", "Timer": "timer", "AppTimer": "app_timer", "Workers": "workers",
	"ControlSched": "control_sched", "Admission": "admission", "Urgent": "urgent",
	"Loops": "loops", "Assign": "assign", "Exclusive": "exclusive", "RingBuffers": "ring_buffers",
	"WireFaults": "faults", "ReactorFaults": "faults", "ServerCPU": "server_cpu", "Placement": "cpus",
}

// loadField maps each field of loadgen.Config a spec sets, by Go name, to
// its spec field (Settings.Load); a spec sets no other.
var loadField = map[string]string{
	"Hot": "hot", "InFlight": "inflight", "Steady": "steady", "Rate": "rate", "Arrivals": "arrivals",
	"ControlEvery": "control_every", "Control": "control", "ControlTimeout": "control_timeout", "RemovalAfter": "removal_after",
	"StopAt": "stop_at", "UrgentEvery": "urgent_every",
	"ChurnRate": "churn_rate", "ChurnBurst": "churn_burst", "ChurnMax": "churn_max", "HotLead": "hot_lead",
	"Loops": "loadgen_loops", "Engine": "loadgen_engine", "Duration": "duration", "Warmup": "warmup",
}

// differing returns the spec fields in which a and b differ, by comparing
// every struct field of Settings.
func differing(t testing.TB, a, b Settings) []string {
	t.Helper()
	var out []string
	compare := func(what string, va, vb reflect.Value, table map[string]string) {
		for i := range va.NumField() {
			name := va.Type().Field(i).Name
			if name == "Load" && what == "Settings" {
				continue
			}
			ia, ib := va.Field(i), vb.Field(i)
			equal := ia.IsZero() && ib.IsZero()
			if ia.CanInterface() && !equal {
				equal = reflect.DeepEqual(ia.Interface(), ib.Interface())
			}
			f, ok := table[name]
			switch {
			case !ok && what == "Settings":
				t.Fatalf("Settings.%s has no spec field in the test's table", name)
			case !ok && !equal:
				t.Errorf("%s.%s set, which no spec field sets", what, name)
			case !equal && !slices.Contains(out, f):
				out = append(out, f)
			}
		}
	}
	compare("Settings", reflect.ValueOf(a), reflect.ValueOf(b), structField)
	compare("Settings.Load", reflect.ValueOf(a.Load), reflect.ValueOf(b.Load), loadField)
	return out
}

// checkCells asserts what Expand promises of s: the baseline first, then
// each cell differing from it in exactly the field its Factor names, IDs
// unique, and each cell mapping to configurations that validate.
func checkCells(t testing.TB, s *Spec) []Cell {
	t.Helper()
	cells := s.Expand()
	if len(cells) == 0 || cells[0].ID != BaselineID || cells[0].Factor != "" {
		t.Fatalf("first cell %+v, want the baseline", cells)
	}
	if d := differing(t, cells[0].Settings, s.Baseline); len(d) != 0 {
		t.Errorf("baseline cell differs from Spec.Baseline in %v", d)
	}
	ids := map[string]bool{}
	for _, c := range cells {
		if ids[c.ID] {
			t.Errorf("ID %q twice", c.ID)
		}
		ids[c.ID] = true
		if c.ID != BaselineID {
			d := differing(t, c.Settings, s.Baseline)
			// What serves is one field of Settings, Target, which a spec's
			// reactor field sets (a design or a black box) and its target
			// field too (a black box only): a target factor changes it.
			if c.Factor == "target" {
				for i, f := range d {
					if f == "reactor" {
						d[i] = "target"
					}
				}
			}
			if len(d) != 1 || d[0] != c.Factor {
				t.Errorf("cell %s differs from the baseline in %v, want exactly [%s]", c.ID, d, c.Factor)
			}
			want := c.Factor + "=" + c.Value
			if c.Label != "" {
				want = c.Factor + "=" + c.Label
			}
			if c.ID != want {
				t.Errorf("cell ID %q, want %q", c.ID, want)
			}
		}
		rc, lc, err := c.Configs()
		if err != nil {
			t.Errorf("cell %s: Configs: %v", c.ID, err)
			continue
		}
		if c.Target.IsDesign() {
			if err := rc.Validate(); err != nil {
				t.Errorf("cell %s: reactor config: %v", c.ID, err)
			}
		}
		lc.DataAddr = "127.0.0.1:9000"
		if err := lc.Validate(); err != nil {
			t.Errorf("cell %s: load config: %v", c.ID, err)
		}
	}
	return cells
}

func TestExpandOneFactorAtATime(t *testing.T) {
	for _, path := range []string{"testdata/realistic.yaml", "testdata/target.yaml"} {
		t.Run(path, func(t *testing.T) {
			s := mustParse(t, path)
			cells := checkCells(t, s)
			want := 1
			for _, f := range s.Factors {
				want += len(f.Cells)
			}
			if len(cells) != want {
				t.Errorf("%d cells, want %d", len(cells), want)
			}
		})
	}
}

// TestExpandIsACopy proves a caller changing its cells cannot change the
// spec, so two Expand calls agree.
func TestExpandIsACopy(t *testing.T) {
	s := mustParse(t, "testdata/realistic.yaml")
	a := s.Expand()
	for i := range a {
		a[i].Budgets["budget-input"] = "1"
		a[i].Load.Hot = 99
	}
	b := s.Expand()
	if b[0].Budgets["budget-input"] != "16" || b[0].Load.Hot != 4 {
		t.Fatalf("Expand shares state with its callers: %+v", b[0].Settings)
	}
}

func TestStableIDs(t *testing.T) {
	want := []string{
		"baseline",
		"reactor=et", "reactor=prio", "reactor=prio-thread",
		"callback=50us", "callback=uniform:10us-90us",
		"budgets=budget-input=8", "budgets=budget-input=64",
		"budgets=budget-consume=4,budget-input=16",
		"timer=periodic",
		"hot=1", "hot=16",
		"faults=half-packets", "faults=no-budget",
	}
	for range 3 {
		var got []string
		for _, c := range mustParse(t, "testdata/realistic.yaml").Expand() {
			got = append(got, c.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("IDs\n got %q\nwant %q", got, want)
		}
	}
	// The same values written differently give the same IDs: the value
	// part is canonical, not the text as written.
	spec := func(vals string) string {
		return "name: x\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\nfactors:\n  - name: warmup\n    values: " + vals + "\n"
	}
	a, err := Parse([]byte(spec(`[500us, 1s]`)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse([]byte(spec("\n      - \"500µs\"\n      - 1000ms")))
	if err != nil {
		t.Fatal(err)
	}
	if ia, ib := a.Expand()[1:], b.Expand()[1:]; ia[0].ID != "warmup=500us" || ia[0].ID != ib[0].ID || ia[1].ID != ib[1].ID {
		t.Fatalf("IDs depend on spelling: %s %s vs %s %s", ia[0].ID, ia[1].ID, ib[0].ID, ib[1].ID)
	}
}

// TestRoundTrip reads a small realistic spec and checks every field it
// sets, and that its cells map to the reactor flags and load that say the
// same thing.
func TestRoundTrip(t *testing.T) {
	s := mustParse(t, "testdata/realistic.yaml")
	wantBase := Settings{
		Target:   target.Design(reactors.LT),
		Load:     loadgen.Config{Hot: 4, InFlight: 16, Steady: 8, Rate: 20000, ControlEvery: time.Millisecond, Duration: 5 * time.Second, Warmup: time.Second},
		Callback: "0",
		Budgets:  map[string]string{"budget-input": "16"}, Timer: reactors.TimerDeadline,
	}
	if s.Name != "realistic" || s.Repeats != 2 || !reflect.DeepEqual(s.Baseline, wantBase) {
		t.Fatalf("parsed %q repeats %d baseline %+v, want realistic, 2, %+v", s.Name, s.Repeats, s.Baseline, wantBase)
	}
	var names []string
	for _, f := range s.Factors {
		names = append(names, f.Name)
	}
	if want := []string{"reactor", "callback", "budgets", "timer", "hot", "faults"}; !slices.Equal(names, want) {
		t.Fatalf("factors %v, want %v", names, want)
	}
	args := map[string][]string{}
	for _, c := range s.Expand() {
		rc, lc, err := c.Configs()
		if err != nil {
			t.Fatal(err)
		}
		args[c.ID] = rc.Args()
		if c.ID == "hot=16" && (lc.Hot != 16 || lc.InFlight != 16 || lc.Steady != 8 || lc.Rate != 20000 || lc.ControlEvery != time.Millisecond) {
			t.Errorf("hot=16 load %+v", lc)
		}
		if c.ID == "faults=half-packets" && !slices.Equal(lc.Faults, []string{"half-packets"}) {
			t.Errorf("wire faults %q, want [half-packets]", lc.Faults)
		}
	}
	for id, want := range map[string][]string{
		"baseline":                                 {"--budget-input=16"},
		"callback=50us":                            {"--budget-input=16", "--callback=50us"},
		"budgets=budget-input=8":                   {"--budget-input=8"},
		"timer=periodic":                           {"--budget-input=16", "--timer=periodic"},
		"faults=no-budget":                         {"--budget-input=16", "--fault=no-budget"},
		"faults=half-packets":                      {"--budget-input=16"},
		"budgets=budget-input=64":                  {"--budget-input=64"},
		"budgets=budget-consume=4,budget-input=16": {"--budget-consume=4", "--budget-input=16"},
		"callback=uniform:10us-90us":               {"--budget-input=16", "--callback=uniform:10us-90us"},
	} {
		got := slices.Clone(args[id])
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("cell %s: serve args %q, want %q", id, got, want)
		}
	}
}

func TestDefaults(t *testing.T) {
	s, err := Parse([]byte("name: d\nbaseline: {target: {cmd: ./srv}, steady: 2, rate: 1000, duration: 1s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Repeats != DefaultRepeats || len(s.Factors) != 0 || len(s.Expand()) != 1 {
		t.Fatalf("repeats %d, factors %v", s.Repeats, s.Factors)
	}
}

// A valid baseline the error cases below change one thing in; its lines
// are 1 (name) to 7 (duration).
const okBase = `name: e
baseline:
  reactor: lt
  hot: 2
  inflight: 4
  callback: "0"
  duration: 1s
`

// okLabelBase is okBase without its callback, so that a factor's values
// may be commands, and as many lines long.
var okLabelBase = strings.Replace(okBase, `callback: "0"`, "warmup: 1s", 1)

var errorCases = []struct {
	name, spec string
	line       int    // the line the error must name
	want       string // the message after "line N: "
}{
	{"yaml syntax", "name: [x\n", 1, "yaml: did not find expected"},
	// yaml.v3 counts its parser's lines from 0, and names none for line
	// 0: these name the line of the '{' or '[' left open, counted from 1.
	// Each pins the exact line (yamlError's reading of yaml.v3's count):
	// a yaml.v3 that counts otherwise fails here.
	{"unclosed {", okBase + "factors:\n  - {name: hot, values: [1]\n", 9, "yaml: did not find expected ',' or '}'"},
	{"unclosed [", okBase + "factors:\n  - name: hot\n    values: [1, 3\n", 10, "yaml: did not find expected ',' or ']'"},
	{"unclosed { on line 2", "name: e\nbaseline: {reactor: lt, hot: 2,\n  inflight: 4\n  duration: 1s\n", 2, "yaml: did not find expected ',' or '}'"},
	{"unclosed { on line 1", "{name: e\n", 1, "yaml: did not find expected ',' or '}'"},
	{"unclosed { alone", "{name: e", 1, "yaml: did not find expected ',' or '}'"},
	{"block mapping broken", okBase + "  - hot: 3\n", 8, "yaml: did not find expected key (in the mapping or list that begins at line 3)"},
	{"yaml tab", "name: x\nbaseline:\n\treactor: lt\n", 3, "yaml: found character that cannot start any token"},
	{"list broken", "name: x\nfactors:\n  - name: hot\n    values: [1]\n  - name: x\n   values: [2]\n", 6, "yaml: did not find expected '-' indicator (in the mapping or list that begins at line 3)"},
	{"yaml scanner error on line 1", "name: x: y\n", 1, "yaml: mapping values are not allowed in this context"},
	{"unclosed quote", "name: x\nbaseline: \"{reactor: lt}\nfactors: []\n", 2, "yaml: found unexpected end of stream"},
	{"yaml after a byte order mark", "\xef\xbb\xbfname: x\nbaseline: {reactor: lt\n", 2, "yaml: did not find expected ',' or '}'"},
	{"empty", "", 1, "spec: empty"},
	{"not a mapping", "- a\n", 1, "spec: a list"},
	{"unknown top key", okBase + "repeat: 3\n", 8, "repeat: unknown key (accepted: name, baseline, repeats, factors)"},
	{"duplicate key", okBase + "name: f\n", 8, "name: given twice"},
	{"missing name", "baseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\n", 1, "name: missing"},
	{"bad name", "name: 'a b'\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\n", 1, `name: "a b" (accepted:`},
	{"missing baseline", "name: x\n", 1, "baseline: missing"},
	{"repeats zero", okBase + "repeats: 0\n", 8, `repeats: "0" (accepted: 1..1000)`},
	{"unknown baseline key", okBase + "  callbak: 5us\n", 8, "baseline.callbak: unknown key (accepted: reactor, target,"},
	{"bad reactor", strings.Replace(okBase, "reactor: lt", "reactor: epoll", 1), 3, `reactor: unknown reactor "epoll" (accepted: lt, et, oneshot, prio, prio-thread, mainsub, reuseport, shared, uring, uring-reuseport, uring-mainsub)`},
	{"bad count", strings.Replace(okBase, "hot: 2", "hot: many", 1), 4, `hot: "many" is not a count (accepted: an integer >= 0)`},
	{"negative count", strings.Replace(okBase, "hot: 2", "hot: -1", 1), 4, `hot: "-1" is not a count`},
	{"hot too many", strings.Replace(okBase, "hot: 2", "hot: 20000", 1), 4, "hot: hot = 20000 (accepted: 0..10000)"},
	{"bad duration", strings.Replace(okBase, "duration: 1s", "duration: 5", 1), 7, `duration: "5" is not a duration (accepted:`},
	{"duration zero", strings.Replace(okBase, "duration: 1s", "duration: 0s", 1), 7, "duration: zero (accepted: a duration > 0, e.g. 5s; left out, run's default 10s)"},
	{"list for scalar", okBase + "  warmup: [1s]\n", 8, "warmup: a list where a single value belongs"},
	{"bad timer", okBase + "  timer: sometimes\n", 8, `timer: unknown timer mode "sometimes" (accepted: periodic, deadline)`},
	{"bad callback", strings.Replace(okBase, `callback: "0"`, "callback: banana", 1), 6, "callback: "},
	{"unknown budget", okBase + "  budgets:\n    budget-inputs: 8\n", 9, "budgets.budget-inputs: unknown budget (accepted: budget-accept, budget-bytes, budget-consume, budget-ingress, budget-input, budget-time, clock-every)"},
	{"bad budget value", okBase + "  budgets:\n    budget-input: lots\n", 9, `budgets.budget-input: "lots":`},
	{"budget out of range", okBase + "  budgets:\n    budget-input: 0\n", 9, "budgets: invalid reactor configuration: budget-input = 0 (accepted: 1..1048576)"},
	{"budgets not a map", okBase + "  budgets: 8\n", 8, "budgets: a scalar (accepted: a mapping of budget-"},
	{"bad wire fault", okBase + "  faults: [half-packet]\n", 8, `faults[0]: "half-packet": neither a wire fault (half-packets, coalesced,`},
	{"bad reactor fault param", okBase + "  faults: ['missed-rearm:every=0']\n", 8, `faults[0]: "missed-rearm:every=0": neither a wire fault (half-packets, coalesced, slow-consumer, fd-reuse-churn, over-size, reset, half-close) nor a reactor fault (invalid reactor configuration: fault missed-rearm: parameter`},
	{"neither reactor nor target", strings.Replace(okBase, "  reactor: lt\n", "", 1), 2, "baseline.reactor: neither reactor nor target"},
	{"both reactor and target", okBase + "  target: {cmd: ./srv}\n", 8, "target: both reactor and target"},
	{"target without cmd", strings.Replace(okBase, "reactor: lt", "target: {command: x}", 1), 3, "target.command: unknown key (accepted: cmd, label)"},
	// A label: refused in the baseline; where it does not read, at the
	// label's line and the value's field; repeated, or beside the same
	// command, within a factor.
	{"label in the baseline", strings.Replace(okLabelBase, "reactor: lt", "target: {cmd: ./srv, label: srv}", 1), 3, `target: label "srv" in the baseline, whose cell is named baseline`},
	{"label empty", okLabelBase + "factors:\n  - name: reactor\n    values: [{cmd: ./srv, label: ''}]\n", 10, "factors[0].values[0] (reactor): label: empty (accepted: a name of letters, digits"},
	{"label blank", okLabelBase + "factors:\n  - name: reactor\n    values: [{cmd: ./srv, label: '   '}]\n", 10, "factors[0].values[0] (reactor): label: empty"},
	{"label with a space", okLabelBase + "factors:\n  - name: reactor\n    values:\n      - cmd: ./srv\n        label: my server\n", 12, `factors[0].values[0] (reactor): label "my server" (accepted: a name of letters, digits, '.', '_', '-', starting with a letter or digit, at most 40 characters, e.g. gnet)`},
	{"label with a slash", okLabelBase + "factors:\n  - name: reactor\n    values: [{cmd: ./srv, label: a/b}]\n", 10, `factors[0].values[0] (reactor): label "a/b" (accepted:`},
	{"label too long", okLabelBase + "factors:\n  - name: reactor\n    values: [{cmd: ./srv, label: " + strings.Repeat("x", 41) + "}]\n", 10, `factors[0].values[0] (reactor): label "xxxx`},
	{"label not a scalar", okLabelBase + "factors:\n  - name: reactor\n    values: [{cmd: ./srv, label: [a]}]\n", 10, "factors[0].values[0] (reactor): label: a list where a single value belongs"},
	{"label twice in a factor", okLabelBase + "factors:\n  - name: reactor\n    values:\n      - {cmd: ./a, label: srv}\n      - {cmd: ./b, label: srv}\n", 12, `factors[0].values[1] (reactor): label "srv" is also line 11's (accepted: a label per value of a factor)`},
	{"label a design's name", okLabelBase + "factors:\n  - name: reactor\n    values: [et, {cmd: ./a, label: et}]\n", 10, "factors[0].values[1] (reactor): cell reactor=et repeats line 10's"},
	{"one command under two labels", okLabelBase + "factors:\n  - name: reactor\n    values:\n      - {cmd: ./a, label: one}\n      - {cmd: ./a, label: two}\n", 12, "factors[0].values[1] (reactor): cmd:./a is also line 11's value, under another label (accepted: distinct values)"},
	{"label given twice", okLabelBase + "factors:\n  - name: reactor\n    values: [{cmd: ./a, label: x, label: y}]\n", 10, "target.label: given twice"},
	{"target empty cmd", strings.Replace(okBase, "reactor: lt", "target: {cmd: ''}", 1), 3, "target.cmd: empty"},
	{"callback with target", strings.Replace(okBase, "reactor: lt", "target: {cmd: ./srv}", 1), 6, "callback: reactor-only with a target"},
	{"budgets with target", "name: x\nbaseline:\n  target: {cmd: ./srv}\n  hot: 1\n  inflight: 1\n  duration: 1s\n  budgets: {budget-input: 8}\n", 7, "budgets: reactor-only with a target"},
	{"timer with target", "name: x\nbaseline:\n  target: {cmd: ./srv}\n  hot: 1\n  inflight: 1\n  duration: 1s\n  timer: deadline\n", 7, "timer: reactor-only with a target"},
	{"reactor fault with target", "name: x\nbaseline:\n  target: {cmd: ./srv}\n  hot: 1\n  inflight: 1\n  duration: 1s\n  faults: [no-drain]\n", 7, `faults: reactor fault "no-drain" with a target`},
	{"bad cpus", okBase + "  cpus: server=0-\n", 8, `cpus: cpus "server=0-": server: "0-": "0-": want a CPU number`},
	{"cpus side twice", okBase + "  cpus: server=0,server=1\n", 8, `cpus: cpus "server=0,server=1": server given twice`},
	{"bad loadgen loops", okBase + "  loadgen_loops: -1\n", 8, `loadgen_loops: "-1" is not a number of event loops (accepted: 1..256`},
	{"bad server cpu", okBase + "  server_cpu: half\n", 8, `server_cpu: "half" is not a CPU cap (accepted: a number of CPUs, 0.05..1024`},
	{"negative server cpu", okBase + "  server_cpu: -0.5\n", 8, `server_cpu: "-0.5": want a number of CPUs, 0.05..1024, or 0 for no cap`},
	{"server cpu below the least quota", okBase + "  server_cpu: 0.01\n", 8, `server_cpu: "0.01": want a number of CPUs, 0.05..1024`},
	{"zero control timeout", okBase + "  control_every: 10ms\n  control_timeout: 0s\n", 9, `control_timeout: "0s" is not a timeout (accepted: a duration > 0 with a unit, e.g. 10ms; leave it out for the default 10ms)`},
	{"control timeout too long", okBase + "  control_every: 10ms\n  control_timeout: 2h\n", 9, "control_timeout: control-timeout = 2h0m0s (accepted: (0, 1h], or 0 for the default 10ms)"},
	{"zero removal_after", okBase + "  control_every: 10ms\n  removal_after: 0\n", 9, `removal_after: "0" is not a count of timeouts in a row (accepted: an integer >= 1; leave it out for the default 3)`},
	{"control timeout without probes", okBase + "  control_timeout: 50ms\n", 8, "control_timeout: a health check timeout without control probes (accepted: control_every > 0 with control_timeout)"},
	{"removal_after without probes", okBase + "  removal_after: 5\n", 8, "removal_after: a health check's removal count without control probes"},
	{"control timeout factor equals the default", okBase + "  control_every: 10ms\nfactors:\n  - name: control_timeout\n    values: [10ms]\n", 11, "factors[0].values[0] (control_timeout): 10ms equals the baseline's"},
	{"tiny urgent_every", okBase + "  urgent_every: 1us\n", 8, "urgent_every: urgent-every = 1µs (accepted: 0 (no urgent bytes) or in [10µs, 1h0m0s])"},
	{"urgent_every with wire faults", okBase + "  urgent_every: 10ms\n  faults: half-packets\n", 8, "urgent_every: urgent-every = 10ms with wire faults"},
	{"bad control_sched", okBase + "  control_sched: fifo:200\n", 8, `control_sched: "fifo:200": `},
	{"empty control_sched", okBase + "  control_sched: \"\"\n", 8, "control_sched: empty (accepted: scheduling class of the control loop's thread: other, nice:N"},
	{"control_sched with a target", "name: e\nbaseline:\n  target: {cmd: 'true'}\n  hot: 1\n  inflight: 1\n  duration: 1s\n  control_sched: fifo:10\n", 7,
		"control_sched: reactor-only with a target (accepted: reactor settings only with a reactor)"},
	{"steady without rate", okBase + "  steady: 4\n", 8, "steady: steady sources without a rate"},
	{"rate without steady", okBase + "  rate: 1000\n", 8, "rate: a rate without steady sources"},
	{"hot without inflight", strings.Replace(okBase, "  inflight: 4\n", "", 1), 4, "hot: hot sources without inflight"},
	{"no source", strings.Replace(strings.Replace(okBase, "  inflight: 4\n", "", 1), "  hot: 2\n", "", 1), 2, "baseline.hot: no source"},
	{"factors not a list", okBase + "factors: {name: hot}\n", 8, "factors: a mapping (accepted: a list of {name, values})"},
	{"factor unknown field", okBase + "factors:\n  - name: callbacks\n    values: [1us]\n", 9, `factors[0].name: unknown field "callbacks" (accepted: reactor, target,`},
	{"factor unknown key", okBase + "factors:\n  - name: hot\n    value: [1]\n", 10, "factors[0].value: unknown key (accepted: name, values)"},
	{"factor missing values", okBase + "factors:\n  - name: hot\n", 9, "factors[0].values: missing"},
	{"factor empty values", okBase + "factors:\n  - name: hot\n    values: []\n", 10, "factors[0].values: empty or not a list"},
	{"factor twice", okBase + "factors:\n  - {name: hot, values: [1]}\n  - {name: hot, values: [3]}\n", 10, `factors[1].name: factor "hot" given twice`},
	{"factor value equals baseline", okBase + "factors:\n  - name: hot\n    values:\n      - 1\n      - 2\n", 12, "factors[0].values[1] (hot): 2 equals the baseline's"},
	{"factor value equals default", okBase + "factors:\n  - name: timer\n    values: [deadline]\n", 10, "factors[0].values[0] (timer): deadline equals the baseline's"},
	{"factor value repeated", okBase + "factors:\n  - name: warmup\n    values:\n      - 1s\n      - 1000ms\n", 12, "factors[0].values[1] (warmup): cell warmup=1s repeats line 11's"},
	{"factor bad value", okBase + "factors:\n  - name: reactor\n    values: [et, kqueue]\n", 10, `factors[0].values[1] (reactor): unknown reactor "kqueue" (accepted: lt,`},
	{"factor value impossible", okBase + "factors:\n  - name: steady\n    values: [3]\n", 10, "factors[0].values[0] (steady): steady sources without a rate"},
	{"factor out of range", okBase + "factors:\n  - name: budgets\n    values: [{budget-bytes: 1}]\n", 10, "factors[0].values[0] (budgets): invalid reactor configuration: budget-bytes = 1"},
	{"factor target on reactor", "name: x\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\nfactors:\n  - {name: target, values: [{cmd: ./s}]}\n", 4, "factors[0].name: target: the baseline runs a reactor (accepted: a factor on reactor, whose values may be designs or {cmd: '...'})"},
	{"black box where a reactor setting is set", "name: x\nbaseline: {reactor: lt, hot: 1, inflight: 1, callback: 5us, duration: 1s}\nfactors:\n  - name: reactor\n    values: [et, {cmd: ./s}]\n", 5, "factors[0].values[1] (reactor): reactor-only with a target"},
	{"factor reactor fault on target", "name: x\nbaseline: {target: {cmd: ./s}, hot: 1, inflight: 1, duration: 1s}\nfactors:\n  - name: faults\n    values: [no-drain]\n", 5, `factors[0].values[0] (faults): reactor fault "no-drain" with a target`},
	{"alias", "name: &n x\nbaseline: {reactor: lt}\n", 1, "spec: anchors and aliases are not supported"},
}

// TestHealthCheckFields: control_timeout and removal_after reach the load
// generator's configuration and the cell's description, and the manifest's
// configuration only where they are not the default (so manifests written
// before they existed still compare).
func TestHealthCheckFields(t *testing.T) {
	s, err := Parse([]byte("name: hc\nbaseline: {reactor: lt, hot: 1, inflight: 1, control_every: 100ms, duration: 1s}\n" +
		"factors:\n  - {name: control_timeout, values: [5ms]}\n  - {name: removal_after, values: [1, 5]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells := checkCells(t, s)
	want := map[string]struct {
		timeout time.Duration
		k       int
		desc    string
	}{
		BaselineID:            {0, 0, "PING every 100ms (timeout 10ms, removal after 3 in a row)"},
		"control_timeout=5ms": {5 * time.Millisecond, 0, "PING every 100ms (timeout 5ms, removal after 3 in a row)"},
		"removal_after=1":     {0, 1, "PING every 100ms (timeout 10ms, removal after 1 in a row)"},
		"removal_after=5":     {0, 5, "PING every 100ms (timeout 10ms, removal after 5 in a row)"},
	}
	if len(cells) != len(want) {
		t.Fatalf("%d cells, want %d", len(cells), len(want))
	}
	for _, c := range cells {
		w, ok := want[c.ID]
		if !ok {
			t.Fatalf("unexpected cell %s", c.ID)
		}
		_, lc, _ := c.Configs()
		if lc.ControlTimeout != w.timeout || lc.RemovalAfter != w.k {
			t.Errorf("%s: load control timeout %v, removal after %d; want %v, %d", c.ID, lc.ControlTimeout, lc.RemovalAfter, w.timeout, w.k)
		}
		info := c.Info()
		if !strings.Contains(info.Describe, w.desc) {
			t.Errorf("%s: description %q lacks %q", c.ID, info.Describe, w.desc)
		}
		_, hasTimeout := info.Config["control_timeout"]
		_, hasK := info.Config["removal_after"]
		if hasTimeout != (w.timeout != 0) || hasK != (w.k != 0) {
			t.Errorf("%s: manifest configuration %v", c.ID, info.Config)
		}
	}
}

// TestServerCPU parses a server_cpu factor over black-box targets and
// reference reactors: the cap reaches each cell, its description and its
// manifest record, and is absent from both where it is not set.
func TestServerCPU(t *testing.T) {
	s, err := Parse([]byte("name: cap\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s, server_cpu: 0.5}\n" +
		"factors:\n  - {name: server_cpu, values: [0, 0.25]}\n  - {name: reactor, values: [{cmd: ./srv}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"baseline": 0.5, "server_cpu=0": 0, "server_cpu=0.25": 0.25, "reactor=cmd:./srv": 0.5}
	for _, c := range s.Expand() {
		w, ok := want[c.ID]
		if !ok {
			t.Errorf("unexpected cell %s", c.ID)
			continue
		}
		info := c.Info()
		if c.ServerCPU != w {
			t.Errorf("%s: server_cpu %v, want %v", c.ID, c.ServerCPU, w)
		}
		capped := strings.Contains(c.Describe(), "server capped at ")
		if _, recorded := info.Config["server_cpu"]; capped != (w > 0) || recorded != (w > 0) {
			t.Errorf("%s (cap %v): described %q, config %v", c.ID, w, c.Describe(), info.Config)
		}
		delete(want, c.ID)
	}
	if len(want) > 0 {
		t.Errorf("cells missing: %v", want)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range errorCases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.spec))
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", s)
			}
			if !errors.Is(err, ErrSpec) {
				t.Errorf("error %q does not wrap ErrSpec", err)
			}
			msg := err.Error()
			want := "line " + strconv.Itoa(tc.line) + ": " + tc.want
			if !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") {
				t.Errorf("error\n %q\nwant one error, beginning\n %q", msg, want)
			}
		})
	}
}

// TestEveryErrorAtOnce: a spec with several bad fields is refused with
// every one of them (an Errors, in line order, each at its line and
// field, each wrapping ErrSpec), not the first alone; a check that
// depends on another's passing is left out where that one failed (a rule
// of the combination that reads a field that did not read, or one that
// may be misspelt; a factor's values against a baseline with an error; a
// key found missing in a mapping with a misspelt one). ParseSuite
// reports every document's.
func TestEveryErrorAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		suite      bool
		want       []string
	}{
		{"three bad fields", "name: x\nrepeats: 0\nbaseline:\n  reactor: lt\n  hot: 1\n  inflight: 4\n  duration: 1s\n  colour: blue\n  callback: 50\n", false, []string{
			`line 2: repeats: "0" (accepted: 1..1000)`,
			"line 8: baseline.colour: unknown key (accepted: ",
			`line 9: callback: cost: parse "50"`,
		}},
		// A rule of the combination on fields that read, beside a field
		// that does not and a key misspelt: none on a field whose value
		// is not known (hot, which did not read; inflight and the other
		// fields not given, one of which "inflght" may be).
		{"fields that read and fields that do not", "name: x\nbaseline:\n  reactor: lt\n  hot: -1\n  duration: 0s\n  inflght: 2\n", false, []string{
			"line 4: hot: ",
			"line 5: duration: zero",
			"line 6: baseline.inflght: unknown key",
		}},
		// A baseline that reads: each rule of its combination that holds
		// alone; the load generator's own validation waits for them.
		{"combination", "name: x\nbaseline:\n  target: {cmd: ./srv}\n  steady: 2\n  callback: 5us\n  timer: deadline\n  control: 2\n", false, []string{
			"line 4: steady: steady sources without a rate",
			"line 5: callback: reactor-only with a target",
			"line 6: timer: reactor-only with a target",
			"line 7: control: control connections without control probes",
		}},
		// Every factor's and value's, but no comparison with a baseline
		// that did not read, and no "values: missing" beside the "value"
		// it is misspelt as.
		{"factors", "name: x\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s, colour: red}\nfactors:\n  - {name: hot, values: [1, -2]}\n  - {name: colour, values: [red]}\n  - {name: inflight, value: [2]}\n", false, []string{
			"line 2: baseline.colour: unknown key",
			`line 4: factors[0].values[1] (hot): "-2" is not a count`,
			`line 5: factors[1].name: unknown field "colour"`,
			"line 6: factors[2].value: unknown key (accepted: name, values)",
		}},
		{"two specs of a suite", "name: a\nrepeats: 0\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\n---\nname: b\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s, workers: many}\n", true, []string{
			`line 2: repeats: "0"`,
			"line 6: workers: ",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.suite {
				_, err = ParseSuite([]byte(tc.spec))
			} else {
				_, err = Parse([]byte(tc.spec))
			}
			var all Errors
			if !errors.As(err, &all) || !errors.Is(err, ErrSpec) {
				t.Fatalf("error %v, want an Errors wrapping ErrSpec", err)
			}
			lines := strings.Split(err.Error(), "\n")
			got := make([]string, len(all))
			for i, e := range all {
				got[i] = e.Error()
				if !errors.Is(e, ErrSpec) {
					t.Errorf("%q does not wrap ErrSpec", e)
				}
			}
			if !slices.Equal(lines, got) {
				t.Errorf("the text is not the errors one per line:\n%s", err)
			}
			if len(all) != len(tc.want) {
				t.Fatalf("%d errors, want %d:\n%s", len(all), len(tc.want), err)
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
					t.Errorf("no error begins %q:\n%s", w, err)
				}
			}
			if !slices.IsSortedFunc(got, func(a, b string) int { return lineOf(a) - lineOf(b) }) {
				t.Errorf("not in line order:\n%s", err)
			}
		})
	}
}

// lineOf is the N of an error's "line N: ...".
func lineOf(msg string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(msg, ":", 2)[0], "line "))
	return n
}

// FuzzParse feeds Parse arbitrary bytes: it must never panic, every error
// must wrap ErrSpec, and every spec it accepts must expand into cells that
// keep Expand's promises.
func FuzzParse(f *testing.F) {
	for _, p := range []string{"testdata/realistic.yaml", "testdata/target.yaml"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, tc := range errorCases {
		f.Add([]byte(tc.spec))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrSpec) {
				t.Fatalf("error %q does not wrap ErrSpec", err)
			}
			return
		}
		checkCells(t, s)
	})
}

// TestParseSuiteYAMLLine: a YAML error in a suite's second spec names its
// line counted from the start of the suite, as every other error does.
func TestParseSuiteYAMLLine(t *testing.T) {
	for _, tc := range []struct{ name, second, want string }{
		{"unclosed {", "name: f\nbaseline: {reactor: lt, hot: 2,\n  inflight: 4\n", "line 10: yaml: did not find expected ',' or '}'"},
		{"block mapping broken", "name: f\nbaseline:\n  reactor: lt\n  - hot: 3\n", "line 12: yaml: did not find expected key (in the mapping or list that begins at line 11)"},
		{"tab", "name: f\nbaseline:\n\treactor: lt\n", "line 11: yaml: found character that cannot start any token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSuite([]byte(okBase + "---\n" + tc.second))
			if err == nil || !errors.Is(err, ErrSpec) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrSpec and prefix %q", err, tc.want)
			}
		})
	}
}

// TestPlacementFactors: cpus and loadgen_loops are factors like any
// other: each value one cell, differing from the baseline in that field
// alone, in its canonical form, and in the manifest's configuration only
// when set (so that manifests from before them still compare).
func TestPlacementFactors(t *testing.T) {
	spec, err := Parse([]byte(okBase + "factors:\n  - {name: cpus, values: [\"server=0-1,loadgen=2,3\", \"server=count:1,loadgen=count:2\"]}\n  - {name: loadgen_loops, values: [2]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells := spec.Expand()
	want := []struct {
		id, cpus string
		loops    int
	}{
		{"baseline", "", 0}, {"cpus=server=0-1,loadgen=2-3", "server=0-1,loadgen=2-3", 0},
		{"cpus=server=count:1,loadgen=count:2", "server=count:1,loadgen=count:2", 0}, {"loadgen_loops=2", "", 2},
	}
	if len(cells) != len(want) {
		t.Fatalf("%d cells, want %d: %+v", len(cells), len(want), cells)
	}
	for i, c := range cells {
		w := want[i]
		if c.Placement != w.cpus || c.Load.Loops != w.loops {
			t.Errorf("cell %d (%s): cpus %q, loops %d; want %q, %d", i, c.ID, c.Placement, c.Load.Loops, w.cpus, w.loops)
		}
		if i > 0 {
			if d := differing(t, cells[0].Settings, c.Settings); len(d) != 1 {
				t.Errorf("cell %s differs in %v", c.ID, d)
			}
		}
		_, lc, err := c.Configs()
		if err != nil || lc.Loops != w.loops {
			t.Errorf("cell %s: load loops %d (%v), want %d", c.ID, lc.Loops, err, w.loops)
		}
		_, inCfg := c.Info().Config["cpus"]
		if inCfg != (w.cpus != "") {
			t.Errorf("cell %s: cpus in the manifest's configuration %v, want %v", c.ID, inCfg, w.cpus != "")
		}
	}
}
