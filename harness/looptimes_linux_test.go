//go:build linux

package harness

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/internal/jsontime"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/target"
)

// loopTimesResult is a black box's cell whose server record holds thread
// samples a second apart from 0 s to 4 s after the load's start, with a
// 1 s warm-up and a 2 s measured period: a loop thread that waits the
// first second, then serves 60% of each second, waits 20%, sleeps 10% in
// futex and is runnable 10%; a thread of the runtime asleep in futex
// throughout; and a thread that begins at 2 s.
func loopTimesResult() *CellResult {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	load := loadgen.Config{Hot: 1, InFlight: 1, Duration: 2 * time.Second, Warmup: time.Second}
	rec := &diagnose.ThreadTimes{Interval: jsontime.Seconds(20 * time.Millisecond), Samples: 200, SamplerCPU: jsontime.Seconds(40 * time.Millisecond), Span: jsontime.Seconds(4 * time.Second)}
	for s := range 5 {
		busy := max(s-1, 0) // seconds of work so far
		loop := diagnose.ThreadCount{Pid: 10, Tid: 11, Comm: "bb", RunNs: int64(busy) * 600e6, RunqNs: int64(busy) * 100e6,
			Samples: 50 * s, Running: 35 * busy, InWait: 50*s - 50*busy + 10*busy, InCall: map[string]int{"futex": 5 * busy}}
		other := diagnose.ThreadCount{Pid: 10, Tid: 12, Comm: "bb", RunNs: 1e6, RunqNs: 0, Samples: 50 * s, InCall: map[string]int{"futex": 50 * s}}
		snap := diagnose.TimesSnapshot{At: start.Add(time.Duration(s) * time.Second), Threads: []diagnose.ThreadCount{loop, other}}
		if s >= 2 {
			snap.Threads = append(snap.Threads, diagnose.ThreadCount{Pid: 10, Tid: 13, Comm: "bb", Samples: 50 * (s - 2)})
		}
		rec.Snapshots = append(rec.Snapshots, snap)
	}
	return &CellResult{
		Cell: CellSpec{Target: target.Command("bb --listen {addr}"), Load: load},
		Lab:  &lab.Result{Mode: lab.ModeLab, Server: &lab.ProcResult{Elapsed: 5 * time.Second, Threads: rec}},
		Load: &loadgen.Summary{Config: load, StartTime: start, MeasuredS: 2},
	}
}

// TestLoopTimesOverTheMeasuredPeriod: the figures are taken between the
// snapshots at the measured period's ends (1 s and 3 s), not the whole
// record's: the loop thread serves 60%, waits 20%, is blocked 10% in
// futex and runnable 10%; the runtime's thread is another, blocked; the
// thread begun within is not counted; the summary prints them beside the
// latency and the JSON names each figure with its unit.
func TestLoopTimesOverTheMeasuredPeriod(t *testing.T) {
	res := loopTimesResult()
	res.measureLoopTimes()
	lt := res.LoopTimes
	if lt == nil {
		t.Fatalf("no loop times: %s", res.LoopTimesNote)
	}
	if time.Duration(lt.Window) != 2*time.Second || len(lt.Loops) != 1 || lt.OtherCount != 1 || lt.Started != 1 {
		t.Fatalf("window %v, %d loop threads, %d others, %d started; want 2 s, 1, 1, 1: %+v", time.Duration(lt.Window), len(lt.Loops), lt.OtherCount, lt.Started, lt)
	}
	l := lt.Loops[0]
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-6 }
	if !near(l.Serving, 0.6) || !near(l.Runnable, 0.1) || !near(l.Waiting, 0.2) || !near(l.Blocked, 0.1) || !near(l.BlockedIn["futex"], 0.1) {
		t.Errorf("loop thread %+v; want serving 0.6, runnable 0.1, waiting 0.2, blocked 0.1 in futex", l)
	}
	if o := lt.Others; !near(o.Blocked, 1) || o.Waiting != 0 {
		t.Errorf("other threads %+v; want blocked 1 (in futex), waiting 0", o)
	}
	var b strings.Builder
	res.writeLoopTimes(&b)
	text := b.String()
	for _, want := range []string{
		"Loop time    server threads over 2.00 s of the measured period",
		"(/proc: 100 looks, one every 20ms; the sampler used 1.0% of a CPU)",
		"loop thread 11 (bb)          waiting  20%  serving  60%  runnable  10%  blocked 10% (in futex 10%)",
		"1 other thread (of 100%)     waiting   0%  serving   0%  runnable   0%  blocked 100% (in futex 100%)",
		"1 threads began and 0 ended within the period: not counted",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"loop_times":`, `"waiting_fraction":0.2`, `"serving_fraction":0.6`, `"blocked_fraction":0.1`, `"runnable_fraction":0.1`, `"window_s":2`} {
		if !strings.Contains(string(raw), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

// TestLoopTimesSayWhyNone: without a record inside the measured period
// the summary says why there are no figures.
func TestLoopTimesSayWhyNone(t *testing.T) {
	res := loopTimesResult()
	res.Lab.Server.Threads.Snapshots = res.Lab.Server.Threads.Snapshots[:2]
	res.measureLoopTimes()
	var b strings.Builder
	res.writeLoopTimes(&b)
	if res.LoopTimes != nil || !strings.Contains(b.String(), "Loop time    none: thread times: fewer than two of 2 snapshots within the window") {
		t.Errorf("loop times %+v; summary:\n%s", res.LoopTimes, b.String())
	}
}
