//go:build linux

package lab

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// allowedOrSkip is the CPUs this process may use, or a skip where it may
// use fewer than n.

// allowedOrSkip is the CPUs this process may use, or a skip where it may
// use fewer than n.
func allowedOrSkip(t *testing.T, n int) []int {
	t.Helper()
	cpus, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < n {
		t.Skipf("this process may use %d CPU(s) (%v); the test needs %d", len(cpus), cpus, n)
	}
	return cpus
}

// TestRunRefusesACPUOutsideTheAllowedSet: on a thread whose mask is
// narrowed to one CPU, a placement that names another is refused by Run
// before anything starts, naming the side, the CPU and the allowed list.
// The narrowed thread exits locked, so no thread the process keeps is
// changed.
func TestRunRefusesACPUOutsideTheAllowedSet(t *testing.T) {
	cpus := allowedOrSkip(t, 2)
	placement := Placement{Server: ListPlacement(cpus[0]), Client: ListPlacement(cpus[1])}
	type outcome struct {
		res *Result
		run error
	}
	done := make(chan outcome, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		var one unix.CPUSet
		one.Set(cpus[0])
		if err := unix.SchedSetaffinity(0, &one); err != nil {
			done <- outcome{run: err}
			return
		}
		var o outcome
		o.res, o.run = Run(context.Background(), echoSpec(ModeLoopback, placement))
		done <- o
	}()
	o := <-done
	want := "loadgen: CPU " + strconv.Itoa(cpus[1]) + " is not one this process may use (" + strconv.Itoa(cpus[0]) + ")"
	if o.res != nil || o.run == nil || !strings.Contains(o.run.Error(), want) {
		t.Errorf("Run on a thread narrowed to CPU %d: %v, %v; want nil and an error with %q", cpus[0], o.res, o.run, want)
	}
}
