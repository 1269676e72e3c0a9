package results_test

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/results"
)

// TestWriteBenchFormat: configuration lines come first; each valid run is one
// benchmark line named Benchmark<Spec>/<factor>=<value> for every factor,
// with iterations 1 and value/unit pairs; invalid runs and NaN values are
// left out; the commit is on a comment line, not a configuration line.
func TestWriteBenchFormat(t *testing.T) {
	factors := []synthCell{{"hot", "16"}, {"callback", "uniform:10us-90us"}, {"target", "./server --listen {addr}"}, {"budgets", "1-16"}}
	m := synthManifest("black-box", 3, factors, noisy(21, typicalMeans, 0.02, nil))
	m.Runs[0].Valid = false
	m.Runs[2].Metrics[results.MetricDataP99] = math.NaN()
	var buf bytes.Buffer
	if err := results.WriteBench(&buf, m); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"\ngoos: linux\n", "\ngoarch: amd64\n", "\ncpu: Test CPU @ 3.0GHz\n", "\npkg: github.com/reactorlab/reactorlab/matrix\n",
		"\nspec: black-box\n", "\nkernel: 6.12.0 #1 SMP\n", "\nUnit frames/s better=higher\n", "\nUnit data-p99-ns better=lower\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q", want)
		}
	}
	if strings.Contains(out, "\ncommit:") || !strings.HasPrefix(out, "# reactorlab v0.1.0 commit 0123456789abcdef") {
		t.Errorf("the commit must be a comment, not a configuration line")
	}
	names := map[string]int{}
	lines, withNaN := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		lines++
		f := strings.Fields(line)
		if len(f) < 4 || len(f)%2 != 0 || f[1] != "1" {
			t.Fatalf("bad line %q", line)
		}
		units := map[string]bool{}
		for i := 2; i < len(f); i += 2 {
			if _, err := strconv.ParseFloat(f[i], 64); err != nil {
				t.Errorf("value %q: %v", f[i], err)
			}
			if units[f[i+1]] {
				t.Errorf("unit %s twice in %q", f[i+1], line)
			}
			units[f[i+1]] = true
		}
		if !units["data-p99-ns"] {
			withNaN++
		}
		parts := strings.Split(f[0], "/")
		if parts[0] != "BenchmarkBlackBox" || len(parts) != 5 {
			t.Fatalf("name %q", f[0])
		}
		for i, key := range []string{"hot=", "callback=", "target=", "budgets="} {
			if !strings.HasPrefix(parts[i+1], key) {
				t.Errorf("name %q: part %d is not %s", f[0], i+1, key)
			}
		}
		names[f[0]]++
	}
	if want := len(m.Runs) - 1; lines != want || withNaN != 1 {
		t.Errorf("%d benchmark lines (%d without the NaN metric), want %d (1)", lines, withNaN, want)
	}
	for name, want := range map[string]int{
		"BenchmarkBlackBox/hot=4/callback=0/target=-/budgets=budget-input=16":                        3*4 - 1,
		"BenchmarkBlackBox/hot=16/callback=0/target=-/budgets=budget-input=16":                       3,
		"BenchmarkBlackBox/hot=4/callback=uniform:10us-90us/target=-/budgets=budget-input=16":        3,
		"BenchmarkBlackBox/hot=4/callback=0/target=.∕server_--listen_{addr}/budgets=budget-input=16": 3,
		"BenchmarkBlackBox/hot=4/callback=0/target=-/budgets=1_16":                                   3,
	} {
		if names[name] != want {
			t.Errorf("%d lines named %s, want %d (names: %v)", names[name], name, want, names)
		}
	}
}

// TestBenchUnits: every catalogue metric has a distinct benchmark unit
// without spaces; latencies are in ns so benchstat scales them as time.
func TestBenchUnits(t *testing.T) {
	seen := map[string]string{}
	for _, m := range results.Metrics {
		u := results.BenchUnitOf(m)
		if u.Unit == "" || strings.ContainsAny(u.Unit, " \t") || u.Scale <= 0 {
			t.Errorf("%s: unit %+v", m.Name, u)
		}
		if prev, dup := seen[u.Unit]; dup {
			t.Errorf("%s and %s share unit %s", prev, m.Name, u.Unit)
		}
		seen[u.Unit] = m.Name
		if m.Unit == "µs" && (!strings.HasSuffix(u.Unit, "-ns") || u.Scale != 1000) {
			t.Errorf("%s: latency unit %+v", m.Name, u)
		}
	}
	if got := results.BenchName("black-box 2"); got != "BlackBox2" {
		t.Errorf("BenchName = %q", got)
	}
}

// TestWriteBenchScales: each value is the run's metric times its unit's
// scale: latencies in µs are written in ns (×1000), the RSS in MiB in bytes
// (×2²⁰), rates as they are.
func TestWriteBenchScales(t *testing.T) {
	run := map[string]float64{
		results.MetricThroughput: 251_234.5,
		results.MetricDataP99:    182.375,
		results.MetricDataP999:   455.5,
		results.MetricControlP50: 21.25,
		results.MetricServerRSS:  37.5,
		results.MetricServerCPU:  3.25,
	}
	m := synthManifest("scales", 1, nil, func(string, int, string) map[string]float64 { return run })
	var buf bytes.Buffer
	if err := results.WriteBench(&buf, m); err != nil {
		t.Fatal(err)
	}
	var got map[string]float64
	for _, line := range strings.Split(buf.String(), "\n") {
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		if got != nil {
			t.Fatalf("more than one benchmark line:\n%s", buf.String())
		}
		got = map[string]float64{}
		f := strings.Fields(line)
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				t.Fatalf("value %q: %v", f[i], err)
			}
			got[f[i+1]] = v
		}
	}
	for unit, want := range map[string]float64{
		"frames/s":              run[results.MetricThroughput],
		"data-p99-ns":           run[results.MetricDataP99] * 1000,
		"data-p99.9-ns":         run[results.MetricDataP999] * 1000,
		"control-p50-ns":        run[results.MetricControlP50] * 1000,
		"server-rss-B":          run[results.MetricServerRSS] * (1 << 20),
		"server-cpu-sec/Mframe": run[results.MetricServerCPU],
	} {
		if v, ok := got[unit]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", unit, v, ok, want)
		}
	}
	if len(got) != len(run) {
		t.Errorf("units %v, want one per metric of the run", sortedKeys(got))
	}
}
