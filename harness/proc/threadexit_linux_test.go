//go:build linux

package proc

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A target outlives the OS thread of the goroutine that started it. The
// kernel sends a child its Pdeathsig (SIGKILL) when the thread that forked
// it exits, and a goroutine that ends while locked to its thread ends the
// thread: a reference reactor's loop does that when it stops, in a test
// process that also runs targets as children.
func TestTargetOutlivesTheStartingThread(t *testing.T) {
	noLeaks(t)
	type started struct {
		p   *Process
		tid int
		err error
	}
	ch := make(chan started, 1)
	var s started
	for s.p == nil {
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == os.Getpid() {
				// The runtime never ends the main thread: try another.
				runtime.UnlockOSThread()
				ch <- started{}
				return
			}
			// Never unlocked: the thread ends with this goroutine.
			p, err := Start(context.Background(), Spec{Argv: []string{echoBin, "--listen", "{addr}"}})
			ch <- started{p, unix.Gettid(), err}
		}()
		if s = <-ch; s.err != nil {
			t.Fatal(s.err)
		}
	}
	t.Cleanup(func() { s.p.Stop() })
	// Positive evidence that the thread is gone: its task leaves
	// /proc/self/task once it has exited, which is when the kernel sends
	// the Pdeathsig of the children it forked.
	task := fmt.Sprintf("/proc/self/task/%d", s.tid)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(task); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the starting goroutine's thread (tid %d) did not exit within 5 s", s.tid)
		}
	}
	// A child killed by the thread's exit had its SIGKILL before this
	// SIGTERM, whatever the timing: its exit says which came first.
	e := mustStop(t, s.p)
	if e.Signal == "killed" || e.Killed {
		t.Fatalf("the target was killed (%s) when the thread that started it exited", e)
	}
	t.Logf("the target outlived the starting thread and answered the stop: %s", e)
}
