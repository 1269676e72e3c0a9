//go:build linux

package reactors_test

import (
	"errors"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/reactors/priothread"
)

// TestParseCPUList: the Linux CPU list form, read and written back, and
// refusals that name the bad part.
func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		text string
	}{
		{"0", []int{0}, "0"},
		{"0-3,8", []int{0, 1, 2, 3, 8}, "0-3,8"},
		{" 5 , 1-2 ", []int{1, 2, 5}, "1-2,5"},
		{"1023", []int{1023}, "1023"},
	} {
		got, err := reactors.ParseCPUList(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		if s := reactors.FormatCPUList(got); s != tc.text {
			t.Errorf("FormatCPUList(%v) = %q, want %q", got, s, tc.text)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", "empty CPU list"},
		{"3-1", `"3-1": a range is written low-high`},
		{"0,0", "CPU 0 is given twice"},
		{"0-2,1", "CPU 1 is given twice"},
		{"1024", `"1024": want a CPU number (0..1023)`},
		{"x", `"x": want a CPU number`},
		{"1,,2", `"": want a CPU number`},
	} {
		if _, err := reactors.ParseCPUList(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseCPUList(%q): %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

// allowed is the calling thread's CPUs.
func allowed(t *testing.T) []int {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var out []int
	for i := range reactors.MaxCPU {
		if set.IsSet(i) {
			out = append(out, i)
		}
	}
	return out
}

// threadMask is a thread of this process's Cpus_allowed_list.
func threadMask(t *testing.T, tid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("task %d: no Cpus_allowed_list", tid)
	return ""
}

// runPlaced starts prio-thread with loopCPUs, and returns each loop's
// reported placement and the mask the kernel shows for its thread.
func runPlaced(t *testing.T, loopCPUs []int) ([]reactors.LoopThread, []string) {
	t.Helper()
	cfg := reactors.DefaultConfig()
	cfg.LoopCPUs = loopCPUs
	r, err := designs.New(reactors.PrioThread, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	defer func() {
		r.Stop()
		if _, err := r.Wait(); err != nil {
			t.Errorf("reactor: %v", err)
		}
	}()
	placed := r.LoopPlacement()
	masks := make([]string, len(placed))
	for i, p := range placed {
		masks[i] = threadMask(t, p.Tid)
	}
	return placed, masks
}

// TestLoopCPUsOneLoopPerCPU: with two CPUs, prio-thread's data loop and
// its control loop (Layout.ControlLoop) are each pinned to a CPU of their
// own, in loop order, and the kernel shows each thread on exactly that
// CPU; Stats.LoopThreads reports the same.
func TestLoopCPUsOneLoopPerCPU(t *testing.T) {
	cpus := allowed(t)
	if len(cpus) < 2 {
		t.Skipf("this process may use %d CPU(s); the test needs two", len(cpus))
	}
	cpus = cpus[:2]
	placed, masks := runPlaced(t, cpus)
	layout := priothread.Design{}.Layout(&reactors.Config{})
	if len(placed) != layout.Loops {
		t.Fatalf("%d loops placed, the layout has %d", len(placed), layout.Loops)
	}
	for i, p := range placed {
		if p.CPU != cpus[i] || masks[i] != strconv.Itoa(cpus[i]) {
			t.Errorf("loop %d (tid %d): reported CPU %d, kernel mask %q; want CPU %d", i, p.Tid, p.CPU, masks[i], cpus[i])
		}
	}
	ctl := placed[layout.ControlLoop].CPU
	for i, p := range placed {
		if i != layout.ControlLoop && p.CPU == ctl {
			t.Errorf("control loop %d shares CPU %d with loop %d", layout.ControlLoop, ctl, i)
		}
	}
}

// TestLoopCPUsMoreLoopsThanCPUs: prio-thread's two loops on a list of one
// CPU share it (round-robin over the list wraps): both threads on that
// CPU.
func TestLoopCPUsMoreLoopsThanCPUs(t *testing.T) {
	cpu := allowed(t)[0]
	t.Logf("2 loops on 1 CPU (%d): both share it", cpu)
	placed, masks := runPlaced(t, []int{cpu})
	for i, p := range placed {
		if p.CPU != cpu || masks[i] != strconv.Itoa(cpu) {
			t.Errorf("loop %d (tid %d): reported CPU %d, kernel mask %q; want CPU %d", i, p.Tid, p.CPU, masks[i], cpu)
		}
	}
}

// TestLoopCPUsUnpinned: without LoopCPUs every loop reports CPU -1 and
// keeps the mask it inherited.
func TestLoopCPUsUnpinned(t *testing.T) {
	want := reactors.FormatCPUList(allowed(t))
	placed, masks := runPlaced(t, nil)
	for i, p := range placed {
		if p.CPU != -1 || masks[i] != want {
			t.Errorf("loop %d: reported CPU %d, mask %q; want -1 and the inherited %q", i, p.CPU, masks[i], want)
		}
	}
}

// TestLoopCPUsRefused: a CPU this process may not use is refused by New
// (on a thread whose mask is narrowed to one CPU, so that another is
// really outside it), naming the CPU and the allowed list; a CPU given
// twice is refused by Validate.
func TestLoopCPUsRefused(t *testing.T) {
	cpus := allowed(t)
	if len(cpus) < 2 {
		t.Skipf("this process may use %d CPU(s); the test needs two", len(cpus))
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the narrowed thread exits with the goroutine
		var one unix.CPUSet
		one.Set(cpus[0])
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			errc <- err
			return
		}
		cfg := reactors.DefaultConfig()
		cfg.LoopCPUs = []int{cpus[1]}
		r, err := designs.New(reactors.LT, cfg)
		if err == nil {
			r.Start()
			r.Stop()
			r.Wait()
		}
		errc <- err
	}()
	err := <-errc
	want := "loop-cpus = " + strconv.Itoa(cpus[1]) + ": CPU " + strconv.Itoa(cpus[1]) + " is not one this process may use (" + strconv.Itoa(cpus[0]) + ")"
	if !errors.Is(err, reactors.ErrConfig) || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("New with a CPU outside the thread's mask: %v; want ErrConfig with %q", err, want)
	}
	cfg := reactors.DefaultConfig()
	cfg.LoopCPUs = []int{cpus[0], cpus[0]}
	if err := cfg.Validate(); !errors.Is(err, reactors.ErrConfig) || !strings.Contains(err.Error(), "loop-cpus") {
		t.Errorf("Validate with a CPU twice: %v; want ErrConfig naming loop-cpus", err)
	}
}
