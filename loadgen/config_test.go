package loadgen_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
)

func validConfig() loadgen.Config {
	return loadgen.Config{DataAddr: "127.0.0.1:7070", Hot: 1, InFlight: 4, Duration: time.Second}
}

// TestValidate: every refusal names the field and what is accepted.
func TestValidate(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	cases := []struct {
		name string
		edit func(*loadgen.Config)
		want []string // substrings of the error
	}{
		{"open loop without rate", func(c *loadgen.Config) { c.Hot, c.Steady = 0, 2 }, []string{"rate = 0", "open loop", "refuses to run without a rate", "accepted: rate > 0"}},
		{"rate without steady", func(c *loadgen.Config) { c.Rate = 100 }, []string{"rate = 100 without steady sources"}},
		{"NaN rate", func(c *loadgen.Config) { c.Steady, c.Rate = 1, math.NaN() }, []string{"rate = NaN", "accepted: 0 < rate"}},
		{"hot without inflight", func(c *loadgen.Config) { c.InFlight = 0 }, []string{"inflight = 0", "accepted: 1..65536"}},
		{"no source", func(c *loadgen.Config) { c.Hot = 0 }, []string{"no source", "accepted: at least one hot or steady source, or control probes"}},
		{"negative hot", func(c *loadgen.Config) { c.Hot = -1 }, []string{"hot = -1", "accepted: 0..10000"}},
		{"no duration", func(c *loadgen.Config) { c.Duration = 0 }, []string{"duration = 0s", "accepted: (0, 24h]"}},
		{"negative warmup", func(c *loadgen.Config) { c.Warmup = -time.Second }, []string{"warmup = -1s"}},
		{"more loops than connections", func(c *loadgen.Config) { c.Loops = 2 }, []string{"loops = 2", "at most one loop per connection (1 hot + 0 steady + 0 control)"}},
		{"negative loops", func(c *loadgen.Config) { c.Loops = -1 }, []string{"loops = -1", "1..256"}},
		{"loop CPU out of range", func(c *loadgen.Config) { c.LoopCPUs = []int{0, 1024} }, []string{"loop-cpus[1] = 1024", "0..1023"}},
		{"stop after the end", func(c *loadgen.Config) { c.StopAt = 2 * time.Second }, []string{"stop-at = 2s", "duration = 1s"}},
		{"bad address", func(c *loadgen.Config) { c.DataAddr = "localhost" }, []string{`addr = "localhost"`, "host:port"}},
		{"bad control address", func(c *loadgen.Config) { c.ControlAddr = "x:0" }, []string{`control-addr = "x:0"`}},
		{"tiny control period", func(c *loadgen.Config) { c.ControlEvery = time.Microsecond }, []string{"control-every = 1µs", ">= 10µs"}},
		{"control without probes", func(c *loadgen.Config) { c.Control = 2 }, []string{"control = 2"}},
		{"negative control timeout", func(c *loadgen.Config) { c.ControlTimeout = -time.Millisecond }, []string{"control-timeout = -1ms", "(0, 1h], or 0 for the default 10ms"}},
		{"negative removal-after", func(c *loadgen.Config) { c.RemovalAfter = -1 }, []string{"removal-after = -1", "1..1000000 consecutive false timeouts, or 0 for the default 3"}},
		{"huge window", func(c *loadgen.Config) { c.Steady, c.Rate, c.Window = 1, 10, 1<<20 }, []string{"window = 1048576", "1..65536"}},
		{"huge payload", func(c *loadgen.Config) { c.Payload = 1 << 20 }, []string{"payload = 1048576"}},
		{"batch too big", func(c *loadgen.Config) { c.InFlight, c.Payload = 65536, 4096 }, []string{"inflight = 65536", "MiB"}},
		{"short interval", func(c *loadgen.Config) { c.Interval = time.Microsecond }, []string{"interval = 1µs", "[1ms, 1h]"}},
		{"unknown fault", func(c *loadgen.Config) { c.Faults = []string{"half-packets", "jitter"} },
			[]string{`unknown wire fault "jitter"`, "accepted: half-packets, coalesced, slow-consumer, fd-reuse-churn, over-size, reset, half-close"}},
		{"bad fault parameter", func(c *loadgen.Config) { c.Faults = []string{"reset:after=x"} }, []string{"reset:after=x"}},
		{"tiny urgent period", func(c *loadgen.Config) { c.UrgentEvery = time.Microsecond }, []string{"urgent-every = 1µs", "accepted: 0 (no urgent bytes) or in [10µs, 1h0m0s]"}},
		{"negative urgent period", func(c *loadgen.Config) { c.UrgentEvery = -time.Second }, []string{"urgent-every = -1s"}},
		{"urgent without data", func(c *loadgen.Config) { c.Hot, c.ControlEvery, c.UrgentEvery = 0, time.Second, time.Millisecond },
			[]string{"urgent-every = 1ms without data connections", "accepted: hot or steady sources"}},
		{"urgent with faults", func(c *loadgen.Config) { c.UrgentEvery, c.Faults = time.Millisecond, []string{"reset"} },
			[]string{"urgent-every = 1ms with wire faults", "one or the other"}},
		{"precision above 1", func(c *loadgen.Config) { c.Precision = 5 }, []string{"precision = 5", "(0, 1]"}},
		{"unknown engine", func(c *loadgen.Config) { c.Engine = "kqueue" }, []string{`loadgen-engine = "kqueue"`, "accepted: epoll or uring"}},
		{"uring with epoll's features", func(c *loadgen.Config) {
			c.Engine, c.Faults, c.UrgentEvery, c.ChurnRate, c.HotLead = loadgen.EngineUring, []string{"coalesced"}, time.Millisecond, 10, time.Second
		}, []string{"loadgen-engine = uring: fault is the epoll engine's only", "loadgen-engine = uring: urgent-every is the epoll engine's only",
			"loadgen-engine = uring: churn-rate is the epoll engine's only", "loadgen-engine = uring: hot-lead is the epoll engine's only"}},
		{"precision within less than the duration", func(c *loadgen.Config) { c.Precision, c.PrecisionWithin = 0.05, time.Millisecond },
			[]string{"precision-within = 1ms", "[duration = 1s, 24h]"}},
		{"precision within without precision", func(c *loadgen.Config) { c.PrecisionWithin = time.Minute }, []string{"precision-within = 1m0s without a precision target"}},
		{"precision with two loops", func(c *loadgen.Config) { c.Hot, c.Precision, c.Loops = 2, 0.05, 2 }, []string{"precision with loops = 2", "needs one loop"}},
		{"precision with a STOP probe", func(c *loadgen.Config) { c.Precision, c.StopAt = 0.05, 500*time.Millisecond }, []string{"precision with stop-at = 500ms"}},
	}
	for _, tc := range cases {
		c := validConfig()
		tc.edit(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !errors.Is(err, loadgen.ErrConfig) {
			t.Errorf("%s: %v does not wrap ErrConfig", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
	// Every problem is reported at once.
	c := loadgen.Config{Steady: 1, Duration: -1}
	if err := c.Validate(); err == nil || strings.Count(err.Error(), "\n") < 2 {
		t.Errorf("several problems, one line: %v", err)
	}
}

// TestConfigJSON: a Config survives encoding/json, durations are strings,
// unknown fields and numeric durations are refused.
func TestConfigJSON(t *testing.T) {
	in := loadgen.Config{DataAddr: "198.18.0.1:7070", ControlAddr: "198.18.0.1:7071", Hot: 2, InFlight: 16,
		Steady: 4, Rate: 12345.5, Window: 64, Payload: 100, ControlEvery: 10 * time.Millisecond, Control: 2,
		ControlTimeout: 25 * time.Millisecond, RemovalAfter: 5, StopAt: 1500 * time.Millisecond, Duration: 10 * time.Second, Warmup: 2 * time.Second, Drain: 250 * time.Millisecond,
		Interval: 500 * time.Millisecond, ConnectTimeout: 3 * time.Second, Faults: []string{"half-packets:every=7", "coalesced"},
		UrgentEvery: 20 * time.Millisecond, Loops: 3, LoopCPUs: []int{1, 0}, Progress: func(loadgen.Progress) {},
		Arrivals: loadgen.ArrivalsPoisson, ArrivalSeed: 7, ChurnRate: 50, ChurnBurst: 2, ChurnMax: 9, HotLead: time.Second,
		Precision: 0.05, PrecisionWithin: time.Minute, Engine: loadgen.EngineUring}
	// Every field is set, so that one the JSON form forgets fails the
	// round trip: a knob added to Config alone would not reach the load
	// generator's process. An unexported field is the package's own (a
	// fault its tests inject in process) and never crosses a process.
	for i, v := 0, reflect.ValueOf(in); i < v.NumField(); i++ {
		if v.Type().Field(i).IsExported() && v.Field(i).IsZero() {
			t.Errorf("the round trip's Config leaves %s unset: set it", v.Type().Field(i).Name)
		}
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"control_every":"10ms"`, `"control_timeout":"25ms"`, `"removal_after":5`, `"duration":"10s"`, `"stop_at":"1.5s"`, `"urgent_every":"20ms"`, `"inflight":16`, `"data_addr":"198.18.0.1:7070"`, `"loops":3`, `"loop_cpus":[1,0]`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("JSON %s lacks %s", b, s)
		}
	}
	var out loadgen.Config
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	in.Progress = nil
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip\n in %+v\nout %+v", in, out)
	}
	// Without urgent bytes the field is left out: the JSON is what it was
	// before the field existed.
	if b, _ := json.Marshal(validConfig()); strings.Contains(string(b), "urgent") {
		t.Errorf("JSON without urgent bytes mentions them: %s", b)
	}
	for _, bad := range []string{
		`{"data_addr":"a:1","hot":1,"inflight":1,"duration":"1s","colour":"red"}`,
		`{"data_addr":"a:1","duration":1000000000}`,
		`{"data_addr":"a:1","duration":"soon"}`,
	} {
		if err := json.Unmarshal([]byte(bad), &out); !errors.Is(err, loadgen.ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", bad, err)
		}
	}
}

// TestSummaryJSONNames pins the JSON names the CLI and reports read.
func TestSummaryJSONNames(t *testing.T) {
	r := &loadgen.Result{Config: validConfig(), Valid: true}
	b, err := json.Marshal(r.Summary())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"valid":true`, `"totals":{"sent":0,"echoed":0,"rejected":0,"lost":0,"duplicated":0,"corrupted_answers":0,"unexpected":0,"wrong_connection":0,"abandoned_by_fault":0,"unanswered":0}`,
		`"self_check":{"limit":""`, `"cpu_user_s":0,"cpu_sys_s":0,"run_s":0}`, `"measured_s":0`, `"config":{"data_addr"`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("summary JSON lacks %s:\n%s", s, b)
		}
	}
}
