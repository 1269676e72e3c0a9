//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness"
	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/results/record"
)

// runOnce runs `reactorlab run` with args and a fresh --out, and returns
// the cell result it wrote, its stdout, and the directory.
func runOnce(t *testing.T, args ...string) (*harness.CellResult, string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cell")
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"run", "--out", dir}, args...), &stdout, &stderr)
	raw, err := os.ReadFile(filepath.Join(dir, harness.CellSummaryFile))
	if err != nil {
		t.Fatalf("run %q: exit %d, no %s: %v\nstdout:\n%s\nstderr:\n%s", args, code, harness.CellSummaryFile, err, stdout.String(), stderr.String())
	}
	var res harness.CellResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("%s: %v", harness.CellSummaryFile, err)
	}
	if code != 0 || !res.Valid {
		t.Fatalf("run %q: exit %d, valid %v: %q\nstdout:\n%s\nstderr:\n%s", args, code, res.Valid, res.Invalid, stdout.String(), stderr.String())
	}
	return &res, stdout.String(), dir
}

// TestRunReference measures the lt reactor for a short while, as the
// README shows, and checks what a reader of the files relies on: the
// summary, the ledger, the interval log and the server's own statistics
// agree. A health check timeout of 1 ns makes every measured PING a false
// timeout, and every second one a false removal.
func TestRunReference(t *testing.T) {
	res, stdout, dir := runOnce(t, "--reactor", "lt", "--hot", "1", "--inflight", "8", "--control-every", "10ms",
		"--control-timeout", "1ns", "--removal-after", "2", "--duration", "1s", "--warmup", "300ms", "--stop-at", "900ms")
	for _, want := range []string{"reactorlab run: lt", "Latency distribution", "data", "control", "Loop time", "Throughput", "Ledger", "VALID"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	t.Logf("mode %s (fallback %q)\n%s", res.Lab.Mode, res.Lab.Fallback, stdout)
	checkLoopTimes(t, res)
	load := res.Load
	if load == nil || load.Totals.Echoed == 0 || load.Totals.Sent == 0 {
		t.Fatalf("no data frames echoed: %+v", load)
	}
	pings := uint64(load.Latency.Classes[loadgen.ClassControl].Count)
	if hc := load.HealthCheck; pings == 0 || hc == nil || hc.FalseTimeouts != pings || hc.FalseRemovals != pings/2 {
		t.Errorf("%d measured PINGs, all later than 1ns: health check %+v", pings, hc)
	} else if want := fmt.Sprintf("health check: false timeouts %d (answered after 1ns), false removals %d (2 in a row)", pings, pings/2); !strings.Contains(stdout, want) {
		t.Errorf("summary lacks %q:\n%s", want, stdout)
	}
	if load.Stop == nil || load.Stop.Status != "acknowledged" || load.Stop.Ledger == nil || !load.Stop.Balanced {
		t.Fatalf("STOP probe: %+v", load.Stop)
	}
	// Every frame the reactor accepted was answered, and we saw each one.
	if res.Server == nil {
		t.Fatal("no final statistics from the reactor")
	}
	if got, want := load.Totals.Echoed+load.Totals.Rejected, res.Server.Ledger.Accepted; got != want {
		t.Errorf("load generator saw %d answers, reactor accepted %d", got, want)
	}
	f, err := os.Open(filepath.Join(dir, loadgen.HlogFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ivs, err := record.ReadHlog(f)
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	for _, iv := range ivs {
		tags[iv.Tag] = true
	}
	for _, want := range []string{loadgen.ClassData, loadgen.ClassControl, loadgen.ClassStop} {
		if !tags[want] {
			t.Errorf("interval log has no %q intervals (tags %v)", want, tags)
		}
	}
}

// TestRunBlackBox measures a server command: the reference reactor run as
// a black box (data and control on one address, no STOP).
func TestRunBlackBox(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	target := "cmd:" + asMainEnv + "=1 " + exe + " serve --listen {addr}"
	res, stdout, _ := runOnce(t, "--target", target, "--hot", "2", "--steady", "1", "--rate", "500",
		"--duration", "1s", "--warmup", "200ms")
	if res.Server != nil {
		t.Errorf("a black box has no reactor statistics, got %+v", res.Server)
	}
	if res.Load.Totals.Echoed == 0 || res.Load.ControlTotals.Echoed == 0 {
		t.Fatalf("nothing echoed: data %+v control %+v", res.Load.Totals, res.Load.ControlTotals)
	}
	if !strings.Contains(stdout, "data-uncorrected") {
		t.Errorf("a steady source's summary shows both data classes:\n%s", stdout)
	}
	checkLoopTimes(t, res)
}

// checkLoopTimes: a run's server, reference reactor or black box, has
// its threads' time over the measured period: a loop thread at least (the
// busy one: it served), and each loop thread's figures, read from
// the scheduler and the samples, sum to the period within the sampling's
// error.
func checkLoopTimes(t *testing.T, res *harness.CellResult) {
	t.Helper()
	lt := res.LoopTimes
	if lt == nil || len(lt.Loops) == 0 {
		t.Fatalf("no loop thread's time: %+v (%s)", lt, res.LoopTimesNote)
	}
	served := false
	for _, l := range lt.Loops {
		if sum := l.Waiting + l.Serving + l.Blocked + l.Runnable + l.Unplaced; sum < 0.85 || sum > 1.15 {
			t.Errorf("loop thread %d: its figures sum to %.3f of the period: %+v", l.Tid, sum, l)
		}
		served = served || l.Serving > 0.01
	}
	if !served {
		t.Errorf("no loop thread served 1%% of a loaded period: %+v", lt.Loops)
	}
}

// TestRunBlackBoxCPU: a black box's CPU is the server's own, not that of
// the shell that started it (which never waits for a server killed with
// it): the example echo server, given as a simple command, is exec'd.
func TestRunBlackBoxCPU(t *testing.T) {
	bin := buildEcho(t)
	var stdout, stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "cell")
	jsonPath := filepath.Join(t.TempDir(), "result.json")
	code := run([]string{"run", "--target", "cmd:" + bin + " --listen {addr}", "--hot", "2", "--inflight", "8",
		"--control-every", "0", "--duration", "1s", "--warmup", "200ms", "--cpus", "none", "--json", jsonPath, "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	// --json FILE: the result in the file, the summary on stdout still.
	if !strings.Contains(stdout.String(), "Verdict      VALID") {
		t.Errorf("stdout lacks the summary:\n%s", stdout.String())
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Lab struct {
			Server struct {
				UserNs int64 `json:"user_ns"`
				SysNs  int64 `json:"sys_ns"`
			} `json:"server"`
		} `json:"lab"`
		Load struct {
			Totals struct {
				Echoed uint64 `json:"echoed"`
			} `json:"totals"`
		} `json:"load"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	cpu := res.Lab.Server.UserNs + res.Lab.Server.SysNs
	frames := res.Load.Totals.Echoed
	if frames == 0 {
		t.Fatal("nothing echoed")
	}
	// An echo costs at least a read and a write: well above 0.2 µs a
	// frame even in large batches; the shell alone measures ~0.
	perFrame := float64(cpu) / float64(frames)
	t.Logf("server CPU %d ns for %d frames: %.0f ns a frame", cpu, frames, perFrame)
	if perFrame < 200 {
		t.Errorf("server CPU %.0f ns a frame over %d frames: the shell's, not the server's?", perFrame, frames)
	}
}

// TestRunServerCPUCap runs a server under a load that keeps it busy with
// its CPU capped at 0.3: lt itself, and the reactor as a black box behind
// a shell that stays as its parent (a leading assignment keeps the shell),
// where the process doing the work is not the one started. The kernel must
// have throttled the cgroup (so the cap was on the busy process, in force
// and binding); lt's CPU time must stay within the cap (1.25 × the cap
// over its life, plus 0.2 s for its start, before the cap); the load
// generator must not name itself the limit; and the cgroup must be gone.
func TestRunServerCPUCap(t *testing.T) {
	if err := proc.CheckCPULimit(); err != nil {
		t.Skip("cannot cap a process's CPU here:", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const share = 0.3
	for _, tc := range []struct {
		name   string
		server []string
		procs  int // processes moved into the cgroup, at least
	}{
		{"reference", []string{"--reactor", "lt"}, 1},
		{"wrapped black box", []string{"--target", "cmd:" + asMainEnv + "=1 " + exe + " serve --listen {addr}"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() && tc.procs > 1 {
				t.Skip("-short: the reference alone (the wrapped black box's cgroup runs in the full tier)")
			}
			args := append(tc.server, "--hot", "100", "--inflight", "16", "--control-every", "0",
				"--duration", "1s", "--warmup", "300ms", "--server-cpu", fmt.Sprint(share))
			res, stdout, _ := runOnce(t, args...)
			srv := res.Lab.Server
			if srv == nil || srv.CPULimit == nil {
				t.Fatalf("no CPU cap recorded:\n%s", stdout)
			}
			l := srv.CPULimit
			t.Logf("cap %+v; server CPU %v over %v\n%s", *l, time.Duration(srv.UserNs+srv.SysNs), srv.Elapsed, stdout)
			if l.Share != share || l.Throttled == 0 || l.Periods == 0 || l.Processes < tc.procs {
				t.Errorf("cap %+v: want share %v, throttled periods, at least %d processes", *l, share, tc.procs)
			}
			if bound := time.Duration(1.25*share*float64(srv.Elapsed)) + 200*time.Millisecond; tc.procs == 1 &&
				time.Duration(srv.UserNs+srv.SysNs) > bound {
				t.Errorf("server CPU %v over %v, capped at %v CPU: above %v", time.Duration(srv.UserNs+srv.SysNs), srv.Elapsed, share, bound)
			}
			if res.Load.SelfCheck.Limit == "loadgen" {
				t.Errorf("self-check limit %q: the generator, not the capped server", res.Load.SelfCheck.Limit)
			}
			if !strings.Contains(stdout, "capped at 0.3 CPU") {
				t.Errorf("the summary does not say the server was capped:\n%s", stdout)
			}
			if _, err := os.Stat(l.Cgroup); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("cgroup %s left behind: %v", l.Cgroup, err)
			}
		})
	}
}

// buildEcho builds examples/echo into a temporary directory (skipping the
// test where there is no go command) and returns its path.
func buildEcho(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "echo")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the example server")
	}
	if out, err := exec.Command(goBin, "build", "-o", bin, "../../examples/echo").CombinedOutput(); err != nil {
		t.Fatalf("build echo: %v\n%s", err, out)
	}
	return bin
}
