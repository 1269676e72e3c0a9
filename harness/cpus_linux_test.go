//go:build linux

package harness

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/target"
)

// allowedOrSkip is the CPUs this process may use, or a skip where it may
// use fewer than n.
func allowedOrSkip(t *testing.T, n int) []int {
	t.Helper()
	cpus, err := lab.AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < n {
		t.Skipf("this process may use %d CPU(s) (%v); the test needs %d", len(cpus), cpus, n)
	}
	return cpus
}

// checkPinned fails t unless every thread seen of the process was on
// its side's set.
func checkPinned(t *testing.T, name string, p *lab.ProcResult, set lab.SidePlacement) {
	t.Helper()
	if !p.Placement.Equal(set) || !p.AffinityOK || len(p.AffinityStart) == 0 {
		t.Errorf("%s: CPUs %s, affinity ok %v (%v), at start %v", name, p.Placement, p.AffinityOK, p.AffinityBad, p.AffinityStart)
	}
	if !set.Pinned() {
		return
	}
	for _, a := range append(slices.Clone(p.AffinityStart), p.AffinityEnd...) {
		if a.CPUList != set.String() {
			t.Errorf("%s: thread %d on %q, want %s", name, a.Tid, a.CPUList, set)
		}
	}
}

// TestValidateRefusesACPUOutsideTheAllowedSet: on a thread whose mask
// is narrowed to one CPU, a placement that names another is refused by
// CellSpec.Validate before anything starts, naming the side, the CPU and
// the allowed list. The narrowed thread exits locked, so no thread the
// process keeps is changed.
func TestValidateRefusesACPUOutsideTheAllowedSet(t *testing.T) {
	cpus := allowedOrSkip(t, 2)
	placement := lab.Placement{Server: lab.ListPlacement(cpus[0]), Client: lab.ListPlacement(cpus[1])}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		var one unix.CPUSet
		one.Set(cpus[0])
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			done <- err
			return
		}
		done <- CellSpec{Target: target.Design(reactors.LT), Config: reactors.DefaultConfig(), Load: loadgen.Config{Hot: 1, InFlight: 1, Duration: time.Second},
			Placement: placement, Dir: t.TempDir()}.Validate()
	}()
	err := <-done
	want := "loadgen: CPU " + strconv.Itoa(cpus[1]) + " is not one this process may use (" + strconv.Itoa(cpus[0]) + ")"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CellSpec.Validate on a thread narrowed to CPU %d: %v; want an error with %q", cpus[0], err, want)
	}
}

// TestLoopProblems: the check of a side's threads against the loops it
// reported catches each way a placement can be wrong (each case a fault
// planted in the samples) and passes the right one.
func TestLoopProblems(t *testing.T) {
	set := lab.ListPlacement(0, 1)
	pins := []loopPin{{Index: 0, Tid: 10, CPU: 0}, {Index: 1, Tid: 11, CPU: 1}}
	right := []lab.ThreadMasks{{Tid: 9, Masks: []string{"0-1"}}, {Tid: 10, Masks: []string{"0-1", "0"}}, {Tid: 11, Masks: []string{"1"}}}
	if got, _ := loopProblems("server", &lab.ProcResult{Placement: set, Masks: right}, pins); len(got) != 0 {
		t.Errorf("a right placement: %q", got)
	}
	for _, tc := range []struct {
		name   string
		masks  []lab.ThreadMasks
		pins   []loopPin
		want   string
		badTid int
	}{
		{"loop never pinned", []lab.ThreadMasks{{Tid: 9, Masks: []string{"0-1"}}, {Tid: 10, Masks: []string{"0-1"}}, {Tid: 11, Masks: []string{"1"}}}, pins,
			"placement: server: thread 10 last seen on CPUs 0-1, want 0 (loop 0's CPU)", 10},
		{"loop on the other CPU", []lab.ThreadMasks{{Tid: 10, Masks: []string{"1"}}, {Tid: 11, Masks: []string{"1"}}}, pins,
			"thread 10 on CPUs 1, want 0 (loop 0's CPU)", 10},
		{"loop back on the set", []lab.ThreadMasks{{Tid: 10, Masks: []string{"0", "0-1"}}, {Tid: 11, Masks: []string{"1"}}}, pins,
			"thread 10 last seen on CPUs 0-1, want 0", 10},
		{"other thread narrowed", append(slices.Clone(right), lab.ThreadMasks{Tid: 12, Masks: []string{"0-1", "1"}}), pins,
			"thread 12 on CPUs 1, want 0-1 (its side's set)", 12},
		{"loop reported outside the set", right, []loopPin{{Index: 0, Tid: 10, CPU: 5}},
			"loop 0 (thread 10) reported on CPU 5, outside the side's set 0-1", 10},
		{"loop never sampled", right, append(slices.Clone(pins), loopPin{Index: 2, Tid: 13, CPU: 0}),
			"loop 2's thread 13 was never seen by the samples", 13},
	} {
		problems, bad := loopProblems("server", &lab.ProcResult{Placement: set, Masks: tc.masks}, tc.pins)
		if got := strings.Join(problems, "\n"); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		if !bad[tc.badTid] {
			t.Errorf("%s: threads found wrong %v, want thread %d among them", tc.name, bad, tc.badTid)
		}
	}
	if got, _ := loopProblems("server", &lab.ProcResult{Masks: []lab.ThreadMasks{{Tid: 10, Masks: []string{"1"}}}}, pins); len(got) != 0 {
		t.Errorf("an unpinned side is not checked: %q", got)
	}
}

// placedCell runs prio-thread under a short hot load with cpus, the load
// generator on loops loops, and returns its valid result.
func placedCell(t *testing.T, cpus lab.Placement, loops int) *CellResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cell := CellSpec{Target: target.Design(reactors.PrioThread), Config: reactors.DefaultConfig(), Placement: cpus, Mode: lab.ModeAuto, Grace: 2 * time.Second,
		Load: loadgen.Config{Hot: 2, InFlight: 4, ControlEvery: 10 * time.Millisecond, Duration: 600 * time.Millisecond, Warmup: 200 * time.Millisecond, Loops: loops},
		Dir:  filepath.Join(t.TempDir(), "cell")}
	res, err := RunCell(ctx, cell, nil)
	if err != nil {
		t.Fatalf("RunCell: %v", err)
	}
	if !res.Valid {
		t.Fatalf("invalid: %q\nserver masks %v\nloadgen masks %v", res.Invalid, res.Lab.Server.Masks, res.Lab.Client.Masks)
	}
	if res.Server == nil || len(res.Server.LoopThreads) != 2 {
		t.Fatalf("prio-thread's loop threads: %+v", res.Server)
	}
	return res
}

// lastMask is the thread's last sampled mask.
func lastMask(p *lab.ProcResult, tid int) string {
	for _, m := range p.Masks {
		if m.Tid == tid {
			return m.Masks[len(m.Masks)-1]
		}
	}
	return "(never sampled)"
}

// TestCellPlacesEachLoopOnItsCPU runs in the lab (or on loopback):
// prio-thread on a two-CPU server set (data loop on the first, control
// loop on the second, every other thread on both) with the load generator
// unpinned; then the load generator's two loops on a two-CPU set with the
// server unpinned. Every thread's mask is verified against what was
// assigned (checkPlacement), and the test reads the masks itself too.
func TestCellPlacesEachLoopOnItsCPU(t *testing.T) {
	cpus := allowedOrSkip(t, 2)[:2]
	res := placedCell(t, lab.Placement{Server: lab.ListPlacement(cpus...)}, 1)
	for i, l := range res.Server.LoopThreads {
		if l.CPU != cpus[i] || lastMask(res.Lab.Server, l.Tid) != strconv.Itoa(cpus[i]) {
			t.Errorf("server loop %d (thread %d): CPU %d, last mask %s; want CPU %d", i, l.Tid, l.CPU, lastMask(res.Lab.Server, l.Tid), cpus[i])
		}
	}
	res = placedCell(t, lab.Placement{Client: lab.ListPlacement(cpus...)}, 0)
	if got := len(res.Load.Loops); got != 2 {
		t.Errorf("the load generator's loops default to one per CPU of its set: %d reported, want 2", got)
	}
	for _, l := range res.Load.Loops {
		if want := cpus[l.Index%2]; l.CPU != want || lastMask(res.Lab.Client, l.Tid) != strconv.Itoa(want) {
			t.Errorf("loadgen loop %d (thread %d): CPU %d, last mask %s; want CPU %d", l.Index, l.Tid, l.CPU, lastMask(res.Lab.Client, l.Tid), want)
		}
	}
}

// TestCellMoreLoopsThanCPUs: with one CPU a side, prio-thread's two loops
// share the server's CPU and the load generator's two loops share its
// own; every thread is verified on its side's CPU, and the cell's files
// say so, loop by loop (checkSummaryNamesLoops).
func TestCellMoreLoopsThanCPUs(t *testing.T) {
	cpus := allowedOrSkip(t, 2)
	t.Logf("2 server loops on CPU %d, 2 load generator loops on CPU %d: several loops per CPU", cpus[0], cpus[1])
	res := placedCell(t, lab.Placement{Server: lab.ListPlacement(cpus[0]), Client: lab.ListPlacement(cpus[1])}, 2)
	for i, l := range res.Server.LoopThreads {
		if l.CPU != cpus[0] {
			t.Errorf("server loop %d on CPU %d, want %d", i, l.CPU, cpus[0])
		}
	}
	for _, l := range res.Load.Loops {
		if l.CPU != cpus[1] {
			t.Errorf("loadgen loop %d on CPU %d, want %d", l.Index, l.CPU, cpus[1])
		}
	}
	checkPinned(t, "server", res.Lab.Server, lab.ListPlacement(cpus[0]))
	checkPinned(t, "loadgen", res.Lab.Client, lab.ListPlacement(cpus[1]))
	checkSummaryNamesLoops(t, res, cpus[0], cpus[1])
	if b := res.CPUBusy; b == nil || b.Server == nil || b.Loadgen == nil || b.Loadgen.Busy[0] <= 0 {
		t.Errorf("CPU busy over the measured period: %+v", b)
	} else {
		side, why := res.Limit()
		t.Logf("busy: server %.2f, loadgen %.2f over %.2f..%.2f s; limit %s (%s)", b.Server.Mean, b.Loadgen.Mean, b.FromS, b.ToS, side, why)
	}
}

// TestCPUBusy: the busy fraction per CPU is the ticks between the first
// and the last sample inside the measured period (those outside are left
// out), a side with fewer than two samples inside gets a note instead,
// and Limit names the side whose CPUs were full.
func TestCPUBusy(t *testing.T) {
	start := time.Unix(1000, 0)
	tick := func(s float64, busy, total uint64) lab.CPUTicks {
		return lab.CPUTicks{At: start.Add(time.Duration(s * float64(time.Second))), Busy: []uint64{busy}, Total: []uint64{total}}
	}
	srv := &lab.ProcResult{Placement: lab.ListPlacement(0), CPUTicks: []lab.CPUTicks{tick(0.5, 0, 0), tick(1.1, 100, 200), tick(2, 195, 300), tick(3.5, 195, 500)}}
	gen := &lab.ProcResult{Placement: lab.ListPlacement(1), CPUTicks: []lab.CPUTicks{tick(0.5, 0, 0), tick(1.5, 10, 100)}}
	res := &CellResult{Cell: CellSpec{Load: loadgen.Config{Warmup: time.Second}}, Lab: &lab.Result{Server: srv, Client: gen},
		Load: &loadgen.Summary{StartTime: start, MeasuredS: 2, SelfCheck: loadgen.SelfCheck{Limit: loadgen.LimitTarget}}}
	res.measureBusy()
	b := res.CPUBusy
	if b == nil || b.Server == nil || b.Server.Busy[0] != 0.95 || b.FromS < 0.099 || b.FromS > 0.101 || b.ToS != 1 {
		t.Fatalf("server busy: %+v (server %+v); want 95%% over 0.1 s to 1 s", b, b.Server)
	}
	if b.Loadgen != nil || len(b.Notes) != 1 || !strings.Contains(b.Notes[0], "loadgen: 1 of 2 /proc/stat samples inside the measured period") {
		t.Errorf("loadgen with one sample inside: %+v, notes %q", b.Loadgen, b.Notes)
	}
	if side, why := res.Limit(); side != "server" || why != "CPU 0 95% busy" {
		t.Errorf("Limit = %s (%s), want server", side, why)
	}
	res.Load.SelfCheck = loadgen.SelfCheck{Limit: loadgen.LimitLoadgen, Reasons: []string{"send lag p99 5ms"}}
	if side, why := res.Limit(); side != "loadgen" || !strings.Contains(why, "send lag") {
		t.Errorf("Limit with the self-check naming the generator = %s (%s), want loadgen", side, why)
	}
	res.Load.SelfCheck = loadgen.SelfCheck{Limit: loadgen.LimitTarget}
	res.CPUBusy.Server.Busy[0], res.CPUBusy.Server.Mean = 0.5, 0.5
	if side, _ := res.Limit(); side != "neither" {
		t.Errorf("Limit with the server half busy = %s, want neither", side)
	}
	// One full CPU of four is a full loop thread: the server was the limit.
	res.CPUBusy.Server = &SideBusy{CPUs: []int{0, 1, 2, 3}, Busy: []float64{0.1, 0.97, 0.1, 0.1}, Mean: 0.3175}
	if side, why := res.Limit(); side != "server" || why != "CPU 1 97% busy (CPUs 0-3: mean 32%)" {
		t.Errorf("Limit with one of four server CPUs full = %s (%s), want server naming CPU 1", side, why)
	}
	// A capped server is the limit when it spent its quota, whatever its
	// CPU's busy fraction; not when it was seldom throttled.
	res.CPUBusy.Server = &SideBusy{CPUs: []int{0}, Busy: []float64{0.5}, Mean: 0.5}
	srv.CPULimit = &lab.CPULimitRecord{Share: 0.5, Periods: 150, Throttled: 140}
	if side, why := res.Limit(); side != "server" || !strings.Contains(why, "throttled in 140 of the 150 periods") {
		t.Errorf("Limit of a server held at its cap = %s (%s), want server", side, why)
	}
	srv.CPULimit.Throttled = 20
	if side, why := res.Limit(); side != "neither" || !strings.Contains(why, "not held at its cap") {
		t.Errorf("Limit of a capped server seldom throttled = %s (%s), want neither, saying so", side, why)
	}
}

// TestContention: a side is contended when both signals say so — its
// CPUs' time went to other processes, and its own threads waited
// runnable — and then the run is flagged and the limit is the
// contention, not the side (whatever the generator's self-check says);
// one signal alone is not contention, and a CPU that others filled is not
// a side's limit.
func TestContention(t *testing.T) {
	start := time.Unix(1000, 0)
	// busy ticks of 100, user (+ nice + steal) ticks among them; the
	// side's threads' run, wait and user seconds.
	tick := func(s float64, busy, user, total uint64, run, wait, ownUser float64) lab.CPUTicks {
		return lab.CPUTicks{At: start.Add(time.Duration(s * float64(time.Second))), Busy: []uint64{busy}, Total: []uint64{total}, UserSteal: []uint64{user},
			Own: &lab.OwnTime{RunNs: uint64(run * 1e9), WaitNs: uint64(wait * 1e9), UserNs: uint64(ownUser * 1e9)}}
	}
	cell := func(srv, gen []lab.CPUTicks, selfCheck loadgen.SelfCheck) *CellResult {
		res := &CellResult{Cell: CellSpec{Load: loadgen.Config{Warmup: time.Second}},
			Lab:  &lab.Result{Server: &lab.ProcResult{Placement: lab.ListPlacement(0), CPUTicks: srv}, Client: &lab.ProcResult{Placement: lab.ListPlacement(1), CPUTicks: gen}},
			Load: &loadgen.Summary{StartTime: start, MeasuredS: 2, SelfCheck: selfCheck}}
		res.measureBusy()
		return res
	}
	// The server's thread fills its CPU (0.95 of the second), waiting
	// little; the generator's CPU is 99% busy, its threads ran 0.2 of it
	// and waited 0.5: others took its CPU.
	srv := []lab.CPUTicks{tick(1, 0, 0, 0, 0, 0, 0), tick(2, 97, 30, 100, 0.95, 0.02, 0.3)}
	gen := []lab.CPUTicks{tick(1, 0, 0, 0, 0, 0, 0), tick(2, 99, 85, 100, 0.2, 0.5, 0.06)}
	res := cell(srv, gen, loadgen.SelfCheck{Limit: loadgen.LimitLoadgen, Reasons: []string{"send lag p99 5ms"}})
	if b := res.CPUBusy; b == nil || len(b.Contended) != 1 || !strings.HasPrefix(b.Contended[0], "the loadgen's CPU 1: 99% busy, others' processes 79% of it") {
		t.Fatalf("contended: %+v, want the load generator, saying why", b)
	}
	if side, why := res.Limit(); side != "contended" || !strings.Contains(why, "loadgen") {
		t.Errorf("Limit = %s (%s), want contended on the load generator, whatever its self-check says", side, why)
	}
	// The quick suite with a busy process on the generator's CPU: its
	// threads ran 0.15 of it and waited 0.09 (37% of the time they wanted
	// it), where quietly they wait at most 27% of it.
	gen = []lab.CPUTicks{tick(1, 0, 0, 0, 0, 0, 0), tick(2, 100, 98, 100, 0.15, 0.09, 0.12)}
	res = cell(srv, gen, loadgen.SelfCheck{Limit: loadgen.LimitTarget})
	if b := res.CPUBusy; len(b.Contended) != 1 || !strings.Contains(b.Contended[0], "waited runnable 38% of the time they wanted a CPU") {
		t.Errorf("a busy process beside a light generator: contended %q, want the load generator", b.Contended)
	}
	// Others' time alone (its threads never waited): no contention; and
	// a generator CPU that others filled is not the generator's limit.
	gen = []lab.CPUTicks{tick(1, 0, 0, 0, 0, 0, 0), tick(2, 99, 85, 100, 0.2, 0.01, 0.06)}
	res = cell(srv, gen, loadgen.SelfCheck{Limit: loadgen.LimitTarget})
	if len(res.CPUBusy.Contended) != 0 {
		t.Errorf("one signal: contended %q, want none", res.CPUBusy.Contended)
	}
	if side, why := res.Limit(); side != "server" || why != "CPU 0 97% busy, its own threads 0.95 CPU" {
		t.Errorf("Limit = %s (%s), want the server, whose own thread filled its CPU", side, why)
	}
	// Waiting alone (its own threads outnumber its CPU, nobody else
	// there, the kernel's network work on its CPU its own traffic's): no
	// contention either.
	gen = []lab.CPUTicks{tick(1, 0, 0, 0, 0, 0, 0), tick(2, 99, 30, 100, 0.97, 0.6, 0.3)}
	res = cell(srv, gen, loadgen.SelfCheck{Limit: loadgen.LimitTarget})
	if len(res.CPUBusy.Contended) != 0 {
		t.Errorf("waiting on its own threads: contended %q, want none", res.CPUBusy.Contended)
	}
	if side, _ := res.Limit(); side != "loadgen" {
		t.Errorf("Limit = %s, want the load generator, whose own threads filled its CPU", side)
	}
}
