//go:build linux

package lab

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
)

// errWorkerGone reports a call to a worker that has ended.
var errWorkerGone = errors.New("worker thread has ended")

// workersReturnThreads, set only by a test's planted fault (breakWorkers),
// breaks the rule below: a worker's thread goes back to Go's pool when it
// ends, in whatever namespace and on whatever mask it was left. It shows
// that the run child's audit of its own threads catches the mistake.
var workersReturnThreads bool

// A worker is a goroutine locked to an OS thread of its own, on which a
// side's namespace and CPU changes are made and from which its process is
// forked, so that every thread of that process inherits both.
//
// The thread never returns to Go's pool: runtime.UnlockOSThread is never
// called, and when the worker ends its goroutine returns still locked, so
// Go discards the thread with whatever namespace and mask it had. No other
// goroutine ever runs on it. A worker must end only after the process it
// forked has been reaped: the child's parent-death signal (SIGKILL) fires
// when the thread that forked it exits, not when this process does.
type worker struct {
	name string
	fns  chan func()
	quit chan struct{}
	done chan struct{}
}

// startWorker starts a worker and runs setup on its thread first; if setup
// fails, the worker (and its thread) ends and the error is returned.
func startWorker(name string, setup func() error) (*worker, error) {
	w := &worker{name: name, fns: make(chan func()), quit: make(chan struct{}), done: make(chan struct{})}
	errc := make(chan error, 1)
	go w.run(setup, errc, nil)
	if err := <-errc; err != nil {
		<-w.done
		return nil, err
	}
	return w, nil
}

// run is the worker's goroutine. It first makes sure its thread is not the
// main thread, which Go never ends (a goroutine locked to it that returns
// leaves it parked, with whatever it was changed to): if it is, it keeps
// the main thread while it starts run again, so that the new goroutine
// cannot be scheduled there, and lets go of it (unchanged) once the new one
// has a thread of its own (so only a first run can be on the main thread).
// locked, if not nil, is closed once run holds a thread that is not the
// main one.
func (w *worker) run(setup func() error, errc chan<- error, locked chan<- struct{}) {
	runtime.LockOSThread() // for good, unless this is the main thread: see the type's doc
	if unix.Gettid() == unix.Getpid() {
		again := make(chan struct{})
		go w.run(setup, errc, again)
		<-again
		runtime.UnlockOSThread()
		return
	}
	if locked != nil {
		close(locked)
	}
	if workersReturnThreads {
		defer runtime.UnlockOSThread()
	}
	defer close(w.done)
	if setup != nil {
		if err := setup(); err != nil {
			errc <- err
			return
		}
	}
	errc <- nil
	for {
		select {
		case f := <-w.fns:
			f()
		case <-w.quit:
			return
		}
	}
}

// do runs f on the worker's thread and returns its error.
func (w *worker) do(f func() error) error {
	errc := make(chan error, 1)
	select {
	case w.fns <- func() { errc <- f() }:
		return <-errc
	case <-w.done:
		return fmt.Errorf("%s: %w", w.name, errWorkerGone)
	}
}

// stop ends the worker and waits for its goroutine to return; Go then
// discards the thread. Call it only once the worker's process is reaped.
func (w *worker) stop() {
	close(w.quit)
	<-w.done
}

// pinThread sets the calling thread's affinity to set and reads it back;
// an unpinned set leaves the mask as inherited. set is resolved (a list).
func pinThread(set SidePlacement) error {
	if !set.Pinned() {
		return nil
	}
	var want unix.CPUSet
	for _, cpu := range set.List() {
		want.Set(cpu)
	}
	if err := unix.SchedSetaffinity(0, &want); err != nil {
		return fmt.Errorf("pin thread to CPUs %s: %w", set, os.NewSyscallError("sched_setaffinity", err))
	}
	var got unix.CPUSet
	if err := unix.SchedGetaffinity(0, &got); err != nil {
		return fmt.Errorf("pin thread to CPUs %s: %w", set, os.NewSyscallError("sched_getaffinity", err))
	}
	if got != want {
		return fmt.Errorf("pin thread to CPUs %s: the kernel kept %s", set, reactors.FormatCPUList(maskList(&got)))
	}
	return nil
}

// AllowedCPUs lists the CPUs the calling thread may use, ascending: what
// the children of a worker would inherit before pinning, and what
// Placement.Resolve resolves a placement against in Run.
func AllowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("cpus: %w", os.NewSyscallError("sched_getaffinity", err))
	}
	return maskList(&set), nil
}

// maskList is the CPUs of a mask, ascending.
func maskList(set *unix.CPUSet) []int {
	var out []int
	for i := range maxCPU {
		if set.IsSet(i) {
			out = append(out, i)
		}
	}
	return out
}

// ResolveAllowed is c resolved against the CPUs the calling thread may use
// (AllowedCPUs, then Placement.Resolve): every side a list of CPUs it may
// use, or unpinned.
func (c Placement) ResolveAllowed() (Placement, error) {
	allowed, err := AllowedCPUs()
	if err != nil {
		return Unpinned, err
	}
	return c.Resolve(allowed)
}
