//go:build linux

package loadgen_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/results/record"
)

// TestLoopsAddUp runs every kind of source on three loops against lt and
// checks what several loops must keep: connections dealt by position
// (hot, steady, control; position p to loop p mod 3), each loop on its own
// thread; the loops' totals add up to the run's; the run's connections in
// the order of one loop; the run's recorder is the merge of the loops'
// (every class's total), and its interval log, written and read back, has
// for every tag and interval the merge of the loops' logs' lines; the
// progress reports are sums over the loops. Every check is an equality of
// counts or histograms, which a shorter run makes no easier: with -short
// the measured part is 400 ms instead of a second.
func TestLoopsAddUp(t *testing.T) {
	t.Parallel() // its own reactor; equalities of counts decide, not timings
	r := startReactor(t, reactors.LT)
	var mu sync.Mutex
	var reports []loadgen.Progress
	duration := time.Second
	if testing.Short() {
		duration = 400 * time.Millisecond
	}
	cfg := loadgen.Config{DataAddr: r.Data, ControlAddr: r.Control, Hot: 3, InFlight: 4, Steady: 2, Rate: 2000,
		ControlEvery: 10 * time.Millisecond, Control: 2, Loops: 3,
		Warmup: 200 * time.Millisecond, Duration: duration, Interval: 100 * time.Millisecond,
		Progress: func(p loadgen.Progress) {
			mu.Lock()
			reports = append(reports, p)
			mu.Unlock()
		}}
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid {
		t.Fatalf("invalid: %q", res.Invalid)
	}
	wantConns := [][]string{{"hot-0", "steady-0", "control-1"}, {"hot-1", "steady-1"}, {"hot-2", "control-0"}}
	if len(res.Loops) != 3 {
		t.Fatalf("%d loop reports, want 3", len(res.Loops))
	}
	var data, control loadgen.Accounting
	tids := map[int]bool{}
	for i, lr := range res.Loops {
		if lr.Index != i || !slices.Equal(lr.Connections, wantConns[i]) {
			t.Errorf("loop report %d: index %d, connections %q, want %q", i, lr.Index, lr.Connections, wantConns[i])
		}
		if lr.Tid <= 0 || tids[lr.Tid] {
			t.Errorf("loop %d: thread %d, not a thread of its own (%v)", i, lr.Tid, tids)
		}
		tids[lr.Tid] = true
		if lr.CPU != -1 {
			t.Errorf("loop %d: CPU %d without loop-cpus, want -1", i, lr.CPU)
		}
		if lr.Totals.Echoed == 0 {
			t.Errorf("loop %d echoed nothing: %+v", i, lr.Totals)
		}
		data = addAccounting(data, lr.Totals)
		control = addAccounting(control, lr.ControlTotals)
	}
	if data != res.Totals || control != res.ControlTotals {
		t.Errorf("the loops' totals add up to %+v and %+v, the run's are %+v and %+v", data, control, res.Totals, res.ControlTotals)
	}
	var names []string
	for _, c := range res.Conns {
		names = append(names, c.Name)
	}
	if want := []string{"hot-0", "hot-1", "hot-2", "steady-0", "steady-1", "control-0", "control-1"}; !slices.Equal(names, want) {
		t.Errorf("the run's connections %q, want %q", names, want)
	}

	for _, class := range res.Recorder.Classes() {
		want := record.NewHistogram()
		for _, lr := range res.Loops {
			if h, ok := lr.Recorder.Histogram(class); ok {
				want.Merge(h)
			}
		}
		got, _ := res.Recorder.Histogram(class)
		if !got.Equals(want) {
			t.Errorf("class %s: the run's total has %d values, the loops' %d", class, got.TotalCount(), want.TotalCount())
		}
	}
	if h, _ := res.Recorder.Histogram(loadgen.ClassControl); h.TotalCount() == 0 {
		t.Error("no control latency recorded")
	}
	checkMergedLog(t, res)

	mu.Lock()
	defer mu.Unlock()
	if len(reports) < 3 {
		t.Fatalf("%d progress reports in a %v run at %v intervals", len(reports), cfg.Warmup+cfg.Duration, cfg.Interval)
	}
	last := reports[len(reports)-1]
	if last.Sent > res.Totals.Sent || last.Sent < res.Totals.Sent/3 || last.ControlSent == 0 {
		t.Errorf("last progress report %+v: not the loops' sum (the run sent %d DATA frames)", last, res.Totals.Sent)
	}
}

// checkMergedLog writes res's interval log and checks that each of its
// lines is the merge of the loops' lines of the same tag and start.
func checkMergedLog(t *testing.T, res *loadgen.Result) {
	t.Helper()
	lines := func(rec *record.Recorder) map[string]*hdrhistogram.Histogram {
		dir := t.TempDir()
		if err := (&loadgen.Result{Recorder: rec}).WriteFiles(dir); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dir, loadgen.HlogFile))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		read, err := record.ReadHlog(f)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*hdrhistogram.Histogram{}
		for _, li := range read {
			key := li.Tag + "@" + li.Start.String()
			if out[key] == nil {
				out[key] = record.NewHistogram()
			}
			out[key].Merge(li.Hist)
		}
		return out
	}
	want := map[string]*hdrhistogram.Histogram{}
	for _, lr := range res.Loops {
		for k, h := range lines(lr.Recorder) {
			if want[k] == nil {
				want[k] = record.NewHistogram()
			}
			want[k].Merge(h)
		}
	}
	got := lines(res.Recorder)
	for k, w := range want {
		if g := got[k]; g == nil || !g.Equals(w) {
			t.Errorf("log line %s: the merged log's is not the merge of the loops' (%d values)", k, w.TotalCount())
		}
	}
	for k, g := range got {
		if want[k] == nil && g.TotalCount() > 0 {
			t.Errorf("log line %s: %d values in the merged log, in no loop's", k, g.TotalCount())
		}
	}
}

// addAccounting adds b's counts to a's.
func addAccounting(a, b loadgen.Accounting) loadgen.Accounting {
	a.Sent += b.Sent
	a.Echoed += b.Echoed
	a.Rejected += b.Rejected
	a.Lost += b.Lost
	a.Duplicated += b.Duplicated
	a.CorruptedAnswers += b.CorruptedAnswers
	a.Unexpected += b.Unexpected
	a.WrongConn += b.WrongConn
	a.Unanswered += b.Unanswered
	a.Abandoned += b.Abandoned
	return a
}

// TestLoopsPinned pins two loops to the CPUs this process may use (round
// robin: on a 1-CPU machine both go to that CPU) and checks, from
// /proc/self/task while the run goes on, that each loop's thread had
// exactly its CPU; a CPU the process may not use is refused naming it.
func TestLoopsPinned(t *testing.T) {
	t.Parallel() // its own reactor; the masks it reads are its own loops'
	cpus := firstAllowedCPUs(t, 2)
	if len(cpus) < 2 {
		t.Logf("one CPU allowed (%v): both loops are pinned to it", cpus)
	}
	r := startReactor(t, reactors.LT)
	masks := map[int]string{} // tid → Cpus_allowed_list, as seen during the run
	var mu sync.Mutex
	cfg := loadgen.Config{DataAddr: r.Data, ControlAddr: r.Control, Hot: 2, InFlight: 4, Loops: 2, LoopCPUs: cpus,
		Duration: 500 * time.Millisecond, Interval: 100 * time.Millisecond,
		Progress: func(loadgen.Progress) {
			mu.Lock()
			defer mu.Unlock()
			for tid, m := range taskMasks(t) {
				masks[tid] = m
			}
		}}
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, lr := range res.Loops {
		want := cpus[i%len(cpus)]
		if lr.CPU != want {
			t.Errorf("loop %d reports CPU %d, want %d", i, lr.CPU, want)
		}
		if got, ok := masks[lr.Tid]; !ok || got != strconv.Itoa(want) {
			t.Errorf("loop %d: thread %d had mask %q during the run (seen: %v), want %d", i, lr.Tid, got, ok, want)
		}
	}

	cfg.LoopCPUs, cfg.Progress = []int{cpus[0], 1023}, nil
	if _, err := loadgen.Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "loop 1: pin its thread to CPU 1023") {
		t.Errorf("loop-cpus with CPU 1023: got %v, want the loop and the CPU named", err)
	}
}

// firstAllowedCPUs returns up to n of the CPUs this thread may use, the
// lowest first.
func firstAllowedCPUs(t *testing.T, n int) []int {
	t.Helper()
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for i := 0; i < 1024 && len(cpus) < n; i++ {
		if allowed.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

// taskMasks reads Cpus_allowed_list of every thread of this process.
func taskMasks(t *testing.T) map[int]string {
	out := map[int]string{}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Error(err)
		return out
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", e.Name(), "status"))
		if err != nil {
			continue // the thread has gone
		}
		tid, _ := strconv.Atoi(e.Name())
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				out[tid] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// TestLoopSelfCheckNamesTheLoop starves one of two loops: loop 1's thread,
// pinned to a CPU of its own, is held off it for 300 ms by a real-time
// thread spinning there (root: SCHED_FIFO), while the target and loop 0
// share the other CPU. Loop 1's own self-check must say the generator was
// the limit (its send lag reaches the starvation), the run's must too, and
// its reasons must name exactly the loops whose own check says so, loop 1
// among them. Needs two CPUs and the privilege for SCHED_FIFO; skips
// otherwise, saying which.
func TestLoopSelfCheckNamesTheLoop(t *testing.T) {
	cpus := firstAllowedCPUs(t, 2)
	if len(cpus) < 2 {
		t.Skipf("needs two CPUs to starve one loop alone; this process may use %v", cpus)
	}
	starve := make(chan error, 1)
	hold := func() {
		starve <- spinRealtime(cpus[1], 300*time.Millisecond)
	}
	if err := probeRealtime(); err != nil {
		t.Skipf("needs SCHED_FIFO to starve a loop: %v", err)
	}
	// A P for each loop, the spinner and the test: with fewer, a loop
	// thread waking from epoll_wait can wait for the P the starved loop
	// holds, and loop 0 is starved too (the runtime's, not the CPU's).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	r := startReactorOn(t, reactors.LT, cpus[0])
	var once sync.Once
	// The starvation begins 700 ms into the run and lasts 300 ms; the run
	// goes on to 1.7 s, to 1.2 s with -short, a fifth of a second past it.
	duration := 1500 * time.Millisecond
	if testing.Short() {
		duration = time.Second
	}
	cfg := loadgen.Config{DataAddr: r.Data, ControlAddr: r.Control, Steady: 2, Rate: 2000, Loops: 2, LoopCPUs: cpus,
		Warmup: 200 * time.Millisecond, Duration: duration, Interval: 100 * time.Millisecond,
		Progress: func(p loadgen.Progress) {
			if p.Elapsed > 700*time.Millisecond {
				once.Do(func() { go hold() })
			}
		}}
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-starve:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the starving thread never ran or never ended")
	}
	if len(res.Loops) != 2 {
		t.Fatalf("%d loop reports", len(res.Loops))
	}
	l1 := res.Loops[1].SelfCheck
	t.Logf("loop 0: %s %q; loop 1: %s %q; run: %s %q", res.Loops[0].SelfCheck.Limit, res.Loops[0].SelfCheck.Reasons, l1.Limit, l1.Reasons, res.SelfCheck.Limit, res.SelfCheck.Reasons)
	// The spinner is a goroutine: the runtime preempts it every 10 ms or
	// so and may be slow to give it back its thread when Ps are busy, so
	// the starvation is somewhat less than 300 ms; 50 ms is far above any
	// lag loop 0 shows beside it.
	if l1.Limit != loadgen.LimitLoadgen || l1.SendLagMaxUs < 50e3 {
		t.Errorf("loop 1, starved 300 ms: limit %q, send lag max %.0f µs; want the generator and at least 50 ms", l1.Limit, l1.SendLagMaxUs)
	}
	if res.SelfCheck.Limit != loadgen.LimitLoadgen {
		t.Errorf("the run's limit %q, want %q", res.SelfCheck.Limit, loadgen.LimitLoadgen)
	}
	why := strings.Join(res.SelfCheck.Reasons, "\n")
	for i, lr := range res.Loops {
		named := strings.Contains(why, "loop "+strconv.Itoa(i)+" (on CPU "+strconv.Itoa(cpus[i])+", serving")
		if named != (lr.SelfCheck.Limit == loadgen.LimitLoadgen) {
			t.Errorf("loop %d (own limit %q) named in the run's reasons: %v; reasons:\n%s", i, lr.SelfCheck.Limit, named, why)
		}
	}
}

// probeRealtime reports whether this process may make a thread SCHED_FIFO.
func probeRealtime() error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}
		errc <- unix.SchedSetAttr(0, &attr, 0)
	}()
	return <-errc
}

// spinRealtime spins for d on cpu as a SCHED_FIFO thread, starving every
// ordinary thread pinned there (the kernel's real-time throttling leaves
// 5% of each second to them).
func spinRealtime(cpu int, d time.Duration) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			errc <- err
			return
		}
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			errc <- err
			return
		}
		for end := time.Now().Add(d); time.Now().Before(end); {
		}
		errc <- nil
	}()
	return <-errc
}
