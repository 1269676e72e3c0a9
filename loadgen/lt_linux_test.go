//go:build linux

package loadgen_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/results/record"
)

// TestLT drives the lt reference reactor (a child process) with hot,
// steady and control sources, and checks the accounting, the closed loop's
// K in flight, the open loop's rate, the bound on the run's length, the
// classes recorded, and the files (the interval log read back equals the
// totals).
//
// It runs on each engine; with -short on the epoll engine only (the uring
// engine's accounting runs in TestAccountingDetects there).
func TestLT(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			if testing.Short() && engine != loadgen.EngineEpoll {
				t.Skipf("-short: the %s engine (its accounting runs in TestAccountingDetects)", loadgen.EngineEpoll)
			}
			needEngine(t, engine)
			testLT(t, engine)
		})
	}
}

func testLT(t *testing.T, engine string) {
	r := startReactor(t, reactors.LT)
	const k = 8
	cfg := loadgen.Config{DataAddr: r.Data, ControlAddr: r.Control, Hot: 2, InFlight: k, Steady: 2, Rate: 4000,
		ControlEvery: 5 * time.Millisecond, Duration: time.Second, Warmup: 200 * time.Millisecond,
		Drain: 500 * time.Millisecond, Interval: 250 * time.Millisecond, Engine: engine}
	began := time.Now()
	res, err := loadgen.Run(context.Background(), cfg)
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid {
		t.Fatalf("invalid: %q", res.Invalid)
	}
	if bound := cfg.Warmup + cfg.Duration + cfg.Drain + cfg.Drain; took > bound {
		t.Errorf("Run took %v, more than warm-up + duration + drain (+ %v to connect and close)", took, cfg.Drain)
	}
	checkLTAccounting(t, res, cfg)
	checkLTSelfCheck(t, res.SelfCheck, cfg, took)
	checkLTClasses(t, res)
	checkLTFiles(t, res, cfg)
}

// checkLTAccounting: every frame echoed, everything balanced, a hot source
// at exactly K in flight at its peak, a steady one within its window.
func checkLTAccounting(t *testing.T, res *loadgen.Result, cfg loadgen.Config) {
	t.Helper()
	tot := res.Totals
	if tot.Sent == 0 || tot.Echoed != tot.Sent || tot.Lost+tot.CorruptedAnswers+tot.Unexpected+tot.Duplicated+tot.WrongConn+tot.Abandoned+tot.Unanswered+tot.Rejected != 0 {
		t.Errorf("totals %+v: want every frame echoed", tot)
	}
	if c := res.ControlTotals; c.Sent == 0 || c.Echoed != c.Sent {
		t.Errorf("control totals %+v", c)
	}
	if !tot.Balanced() || !res.ControlTotals.Balanced() {
		t.Errorf("totals not balanced: data %+v, control %+v", tot, res.ControlTotals)
	}
	for _, c := range res.Conns {
		if !c.Balanced() {
			t.Errorf("%s not balanced: %+v", c.Name, c.Accounting)
		}
	}
	for _, c := range res.Conns {
		if c.Kind == "hot" && c.MaxInFlight != cfg.InFlight {
			t.Errorf("%s: max in flight %d, want exactly K = %d", c.Name, c.MaxInFlight, cfg.InFlight)
		}
		if c.Kind == "steady" && c.MaxInFlight > cfg.WithDefaults().Window {
			t.Errorf("%s: %d in flight, above the window", c.Name, c.MaxInFlight)
		}
	}
}

// checkLTSelfCheck: the steady rate within 1%, the target (or a saturated
// loop) the limit, and a run time and CPU that make sense for a Run that
// took took.
func checkLTSelfCheck(t *testing.T, sc loadgen.SelfCheck, cfg loadgen.Config, took time.Duration) {
	t.Helper()
	if want := cfg.WithDefaults().Engine; sc.Engine != want {
		t.Errorf("self-check says engine %q ran, want %q", sc.Engine, want)
	}
	if (sc.Uring != nil) != (sc.Engine == loadgen.EngineUring) || sc.Uring != nil && (sc.Uring.Enters == 0 || sc.Uring.Reaped == 0) {
		t.Errorf("self-check's ring counters %+v on the %s engine", sc.Uring, sc.Engine)
	}
	if sc.RateRatio < 0.99 || sc.RateRatio > 1.01 {
		t.Errorf("steady rate ratio %.4f (achieved %.1f of %.0f frames/s): outside 1%%", sc.RateRatio, sc.AchievedRate, sc.TargetRate)
	}
	if sc.Limit != loadgen.LimitTarget && sc.Limit != loadgen.LimitLoadgen { // hot sources make the target the limit, unless the loop saturated
		t.Errorf("limit %q with hot sources: %q", sc.Limit, sc.Reasons)
	}
	if sc.RunS < (cfg.Warmup+cfg.Duration).Seconds() || sc.RunS > took.Seconds() || sc.CPUUserS+sc.CPUSysS <= 0 {
		t.Errorf("self-check run %.3f s (CPU %.3f + %.3f s): want the sending and draining time, within Run's %v", sc.RunS, sc.CPUUserS, sc.CPUSysS, took)
	}
	t.Logf("self-check: %+v", sc)
}

// checkLTClasses: the classes' counts match the accounting of the measured
// part, and every class is filled.
func checkLTClasses(t *testing.T, res *loadgen.Result) {
	t.Helper()
	rec := res.Recorder
	data, _ := rec.Histogram(loadgen.ClassData)
	raw, _ := rec.Histogram(loadgen.ClassDataUncorrected)
	if data.TotalCount() == 0 || data.TotalCount() != raw.TotalCount() || data.TotalCount() > int64(res.Totals.Echoed) {
		t.Errorf("data %d, data-uncorrected %d, echoed %d", data.TotalCount(), raw.TotalCount(), res.Totals.Echoed)
	}
	for _, name := range []string{loadgen.ClassControl, loadgen.ClassSendLag, "service/hot-0", "service/hot-1", "service/steady-0", "service/steady-1"} {
		if h, ok := rec.Histogram(name); !ok || h.TotalCount() == 0 {
			t.Errorf("class %s empty", name)
		}
	}
	if p99 := data.ValueAtPercentile(99); p99 <= 0 || p99 > int64(500*time.Millisecond) {
		t.Errorf("data p99 %v", time.Duration(p99))
	}
}

// checkLTFiles: the files written read back: the interval log's measured
// data intervals merge to the data class's total, and the summary decodes
// to what Summary returns.
func checkLTFiles(t *testing.T, res *loadgen.Result, cfg loadgen.Config) {
	t.Helper()
	data, _ := res.Recorder.Histogram(loadgen.ClassData)
	dir := t.TempDir()
	if err := res.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, loadgen.HlogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	logged, err := record.ReadHlog(f)
	if err != nil {
		t.Fatal(err)
	}
	merged := record.NewHistogram()
	warmupEnd := res.Start.Add(cfg.Warmup).Truncate(time.Millisecond)
	for _, li := range logged {
		if li.Tag == loadgen.ClassData && !li.Start.Before(warmupEnd) {
			merged.Merge(li.Hist)
		}
	}
	if !merged.Equals(data) {
		t.Errorf("interval log: measured data intervals merged to %d values, total has %d", merged.TotalCount(), data.TotalCount())
	}
	js, err := os.ReadFile(filepath.Join(dir, loadgen.SummaryFile))
	if err != nil || !strings.Contains(string(js), `"p99_us"`) || !strings.Contains(string(js), `"valid": true`) {
		t.Errorf("summary file: %v\n%.400s", err, js)
	}
	var back loadgen.Summary // a parent process reads the file back
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("summary does not decode: %v", err)
	}
	if want := res.Summary(); !reflect.DeepEqual(back.Totals, want.Totals) || back.Config.Hot != cfg.Hot ||
		!reflect.DeepEqual(back.Latency.Classes[loadgen.ClassData], want.Latency.Classes[loadgen.ClassData]) || !back.StartTime.Equal(want.StartTime) {
		t.Errorf("summary round trip:\n got %+v\nwant %+v", back, want)
	}
}

// TestStopProbeLT: STOP is acknowledged with a balanced ledger that
// accounts exactly for the DATA frames we saw answered, the run ends when
// it is, and nothing is counted lost: with one loop, and with three (STOP
// goes on loop 0's control connection; the steady sources, on loops 1 and
// 2, must stop sending at its acknowledgement too, and what the target
// left unanswered on them is unanswered, not lost). On the uring engine
// with three loops: the acknowledgement reaches the other loops through
// their rings' wakers.
func TestStopProbeLT(t *testing.T) {
	for _, engine := range engines {
		for _, loops := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/loops=%d", engine, loops), func(t *testing.T) {
				if engine != loadgen.EngineEpoll && loops == 1 {
					t.Skipf("the %s engine with three loops (one loop's STOP is the same code)", engine)
				}
				needEngine(t, engine)
				t.Parallel() // its own reactor; its bounds on the run's end are seconds wide
				testStopProbeLT(t, engine, loops)
			})
		}
	}
}

func testStopProbeLT(t *testing.T, engine string, loops int) {
	r := startReactor(t, reactors.LT)
	cfg := loadgen.Config{DataAddr: r.Data, ControlAddr: r.Control, Hot: 1, InFlight: 4, Steady: 2, Rate: 2000, Loops: loops,
		ControlEvery: 10 * time.Millisecond, Duration: 5 * time.Second, StopAt: 300 * time.Millisecond, Drain: time.Second, Engine: engine}
	began := time.Now()
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	st := res.Stop
	if st == nil || st.Status != "acknowledged" || st.Ledger == nil || !st.Balanced {
		t.Fatalf("stop outcome %+v", st)
	}
	if st.Ledger.Accepted != st.DataAnswered {
		t.Errorf("ledger accepted %d, we saw %d DATA frames answered", st.Ledger.Accepted, st.DataAnswered)
	}
	if !res.Valid || res.Totals.Lost != 0 {
		t.Errorf("valid %v %q, totals %+v", res.Valid, res.Invalid, res.Totals)
	}
	if h, _ := res.Recorder.Histogram(loadgen.ClassStop); h.TotalCount() != 1 {
		t.Errorf("stop class has %d values", h.TotalCount())
	}
	if res.Measured < cfg.StopAt || res.Measured > cfg.StopAt+time.Second || took > cfg.StopAt+3*time.Second {
		t.Errorf("measured %v, took %v: the run should end at STOP_ACK (%v), not at the duration (%v)", res.Measured, took, cfg.StopAt, cfg.Duration)
	}
	select {
	case <-r.Exited():
	case <-time.After(5 * time.Second):
		t.Errorf("the reactor did not exit after STOP")
	}
	t.Logf("stop %+v; totals %+v", *st, res.Totals)
}

// TestInterruptStopsEverything cancels a run from its progress callback
// and checks that Run returns promptly, marked interrupted, with nothing
// counted lost, and that no goroutine it started and no descriptor it
// opened is left: with one loop and with three, on each engine (the uring
// engine's loops are woken through their rings, with receives and sends
// in flight).
func TestInterruptStopsEverything(t *testing.T) {
	for _, engine := range engines {
		for _, loops := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/loops=%d", engine, loops), func(t *testing.T) {
				needEngine(t, engine)
				testInterruptStopsEverything(t, engine, loops)
			})
		}
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents) - 1 // the directory's own, open while it is read
}

func testInterruptStopsEverything(t *testing.T, engine string, loops int) {
	r := startReactor(t, reactors.LT)
	before := runtime.NumGoroutine()
	fdsBefore := openFDs(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reports := 0
	var cancelled time.Time
	cfg := loadgen.Config{DataAddr: r.Data, ControlAddr: r.Control, Hot: 1, InFlight: 16, Steady: 1, Rate: 1000, Loops: loops,
		ControlEvery: 10 * time.Millisecond, Duration: time.Minute, Interval: 50 * time.Millisecond, Engine: engine,
		Progress: func(p loadgen.Progress) {
			reports++
			if reports == 3 {
				cancelled = time.Now()
				cancel()
			}
		}}
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || reports < 3 {
		t.Fatalf("interrupted %v after %d reports", res.Interrupted, reports)
	}
	if d := time.Since(cancelled); d > time.Second {
		t.Errorf("Run returned %v after the cancellation", d)
	}
	if res.Totals.Lost != 0 || !res.Valid || res.Totals.Sent != res.Totals.Echoed+res.Totals.Unanswered {
		t.Errorf("totals %+v, invalid %q", res.Totals, res.Invalid)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched() // goroutines that have finished their work may still be exiting
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Run, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
	if n := openFDs(t); n > fdsBefore {
		t.Errorf("%d descriptors open after Run, %d before", n, fdsBefore)
	}
	// A cancelled context before the start is an error, not a run.
	if _, err := loadgen.Run(ctx, cfg); err == nil {
		t.Errorf("Run with a cancelled context did not fail")
	}
}

// TestConnectFailure: a target that does not listen is an error naming the
// source and the address.
func TestConnectFailure(t *testing.T) {
	_, err := loadgen.Run(context.Background(), loadgen.Config{DataAddr: "127.0.0.1:1", Hot: 1, InFlight: 1, Duration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "hot-0") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("err = %v", err)
	}
}
