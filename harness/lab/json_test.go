package lab

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
)

// Every duration in the JSON of a spec and of a result says its unit in
// its key, in seconds ("timeout_s"), no unlabelled nanosecond integer is
// left, and both survive the round trip exactly.
func TestJSONDurationsAreLabelled(t *testing.T) {
	spec := Spec{
		Server:        Proc{Argv: []string{"@test-echo"}, Env: []string{"A=1"}},
		Client:        Proc{Argv: []string{"@test-client", "{addr}"}},
		Control:       true,
		ServerMayExit: true,
		Placement:     Placement{Server: ListPlacement(0), Client: ListPlacement(1)},
		Mode:          ModeLab,
		Timeout:       90 * time.Second,
		Ready:         1500 * time.Millisecond,
		Grace:         2*time.Second + 1,
		SampleEvery:   100 * time.Millisecond,
		Sysctls:       map[string]string{"net.core.somaxconn": "1234"},
	}
	proc1 := &ProcResult{Argv: []string{"@test-echo"}, Pid: 7, Placement: ListPlacement(0), AffinityOK: true, Code: 0,
		AffinityStart: []proc.ThreadAffinity{{Tid: 7, CPUList: "0"}},
		Stdout:        []byte("{}\n"), UserNs: 10_000_000, SysNs: 20_000_000, MaxRSS: 1 << 20,
		Sampled: proc.Usage{UserNs: 1, RSS: 2, PeakRSS: 3}, Samples: 4, Elapsed: 1234567891 * time.Nanosecond}
	res := Result{
		Mode: ModeLab, Addr: "198.18.0.1:9000", Control: "198.18.0.1:9001", Placement: spec.Placement,
		Sysctls: map[string]string{"net.core.somaxconn": "1234"}, Namespaces: []string{"net:[1]"},
		Server: proc1, Client: &ProcResult{Argv: []string{"@test-client"}, Pid: 8, Placement: ListPlacement(1), Code: -1, Signal: "killed", Elapsed: time.Millisecond},
		Audit: Audit{
			Before: Snapshot{Fds: map[int]string{0: "/dev/null"}, Processes: []string{}, Links: []string{"1:lo"}},
			After:  Snapshot{Fds: map[int]string{0: "/dev/null"}, Processes: []string{}, Links: []string{"1:lo"}},
			Child:  &ChildAudit{Threads: 5, Netns: "net:[2]", CPULists: []string{"0-1"}, Swept: []string{"9 (x) start=1"}},
			Diffs:  []string{"keeper: process 9 (x) start=1, started by the run, outlived the run child and was killed"},
		},
		Invalid: []string{"leak audit: …"},
		Elapsed: 3*time.Second + 5,
	}
	for _, c := range []struct {
		name    string
		v, back any
		keys    []string
	}{
		{"Spec", spec, new(Spec), []string{`"timeout_s":90`, `"ready_s":1.5`, `"grace_s":2.000000001`, `"sample_every_s":0.1`}},
		{"Result", res, new(Result), []string{`"elapsed_s":3.000000005`, `"elapsed_s":1.234567891`, `"elapsed_s":0.001`}},
	} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, k := range c.keys {
			if !strings.Contains(string(b), k) {
				t.Errorf("%s: no %s in %s", c.name, k, b)
			}
		}
		for _, old := range []string{`"timeout":`, `"ready":`, `"grace":`, `"sample_every":`, `"elapsed":`} {
			if strings.Contains(string(b), old) {
				t.Errorf("%s: an unlabelled duration %s in %s", c.name, old, b)
			}
		}
		if err := json.Unmarshal(b, c.back); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := reflect.ValueOf(c.back).Elem().Interface(); !reflect.DeepEqual(got, c.v) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v\njson %s", c.name, got, c.v, b)
		}
	}

	// The zero durations of a spec are left out (they mean the defaults).
	if b, _ := json.Marshal(Spec{}); strings.Contains(string(b), "_s") {
		t.Errorf("zero spec: %s", b)
	}
	// A spec in the old form is refused, not run with the defaults.
	var s Spec
	err := json.Unmarshal([]byte(`{"client":{"argv":["x"]},"timeout":60000000000}`), &s)
	if err == nil || !strings.Contains(err.Error(), `"timeout_s"`) {
		t.Errorf("old timeout key: %v", err)
	}
	for _, bad := range []string{`{"timeout_s":"1m"}`, `{"timeout_s":1e300}`} {
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// A duration survives seconds as a float exactly, to the nanosecond, up
// to 26 days (2^51 ns).
func TestSecsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ds := []time.Duration{0, 1, -1, 999_999_999, time.Second, 1<<51 - 1, -(1<<51 - 1)}
	for range 100000 {
		ds = append(ds, time.Duration(r.Int64N(1<<51)))
	}
	for _, d := range ds {
		b, err := json.Marshal(secs(d))
		if err != nil {
			t.Fatal(err)
		}
		var back secs
		if err := json.Unmarshal(b, &back); err != nil || time.Duration(back) != d {
			t.Fatalf("%d ns → %s → %d ns (%v)", d, b, back, err)
		}
	}
}
