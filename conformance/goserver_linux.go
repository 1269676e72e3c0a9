//go:build linux

package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
)

// GoServer is a server written in Go and run inside the test's process,
// the target for an event loop of your own module:
//
//	conformance.Run(t, conformance.GoServer{Label: "myloop", Serve: myloop.Serve}, cases.Catalogue())
//
// For each case Start listens on a fresh port of 127.0.0.1 and calls
// Serve on a goroutine of its own, which must serve a plain TCP byte echo
// on that listener until its context is cancelled; the instance is ready
// once a probe connection has had one byte echoed. Stop cancels the
// context, closes the listener and waits for Serve to return
// (goServerStopBound).
//
// What it measures: the CPU of the whole test process (Usage.CPU: the
// server's goroutines cannot be told from the test's own, so it is an
// upper bound of the server's, which the cases that bound CPU measure
// while their clients are idle). The process and its descriptor table
// are the test's, so Usage.RSS and Usage.Fds are -1 (no memory or
// descriptor count of the server's own) and so is Usage.RunqWait (the
// threads that ran the server ran the test too); Stats returns
// ErrUnsupported (no counters) and Reference is nil. The cases that need
// what it lacks are skipped with the reason: a descriptor limit (Start
// returns ErrUnsupported), a process of its own (SIGTERM's stop contract,
// its threads' wakeups, its memory), the reference protocol or its
// counters.
type GoServer struct {
	// Label names the server in reports: the target's Name is "go:" and
	// Label ("go" when it is empty).
	Label string
	// Serve serves a byte echo on ln until ctx is cancelled, then
	// returns. Returning nil, ctx's error or an error wrapping
	// net.ErrClosed (an Accept on the listener, which Stop closes) is a
	// clean end; any other error, a panic, or a Serve that does not return
	// within goServerStopBound is reported as the instance ending badly at
	// its stop (Final.AtStop), and a Serve that returns before its context
	// is cancelled ends the instance badly during the case (Final.Clean
	// false). Serve owns the connections it accepts and closes them before
	// it returns.
	Serve func(ctx context.Context, ln net.Listener) error
}

// goServerStopBound is how long Stop waits for Serve to return once its
// context is cancelled and its listener closed: a loop wakes from its
// wait (the listener's close, or a wakeup of its own for the context)
// within milliseconds, so seconds are a margin for a loaded machine.
const goServerStopBound = 5 * time.Second

// Name is "go:" and the label.
func (t GoServer) Name() string {
	if t.Label == "" {
		return "go"
	}
	return "go:" + t.Label
}

// Start listens, starts Serve and waits, at most until ctx's deadline
// (StartInstance sets one; a ctx without one waits DefaultStartTimeout),
// for one byte to come back on a probe connection. A Serve that returns
// or fails the probe first is stopped (its context cancelled, its
// listener closed), and Start returns, before the deadline, an error
// saying which, and whether Serve had returned by then.
func (t GoServer) Start(ctx context.Context, setup Setup) (Instance, error) {
	if t.Serve == nil {
		return nil, fmt.Errorf("%s: GoServer.Serve is nil: it must serve a byte echo on the listener it is given", t.Name())
	}
	if setup.FdLimit > 0 {
		return nil, fmt.Errorf("a Go server shares the test's process and its descriptor table, so a descriptor limit cannot be set for it alone: run it as a process (Command): %w", ErrUnsupported)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Name(), err)
	}
	serveCtx, cancel := context.WithCancel(context.Background())
	i := &goServer{ln: ln, cancel: cancel, done: make(chan struct{})}
	go i.serve(serveCtx, t.Serve)
	// The probe ends a margin before ctx's deadline, and the stop after
	// a failure waits half of it: the error is then Serve's, not ctx's.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(DefaultStartTimeout)
	}
	margin := min(100*time.Millisecond, time.Until(deadline)/10)
	if err := i.probe(deadline.Add(-margin)); err != nil {
		i.stopping.Store(true)
		i.cancel()
		_ = i.ln.Close()
		select {
		case <-i.done:
			if !i.early && i.err != nil && !errors.Is(i.err, context.Canceled) && !errors.Is(i.err, net.ErrClosed) {
				err = fmt.Errorf("%w; stopped, %s", err, endText(i.err))
			}
		case <-time.After(time.Until(deadline) - margin/2):
			err = fmt.Errorf("%w; stopped, Serve had not returned when the start gave up (its goroutine is left running)", err)
		}
		return nil, fmt.Errorf("%s: %w", t.Name(), err)
	}
	return i, nil
}

// goServer is a running GoServer. err, early and the end of Serve are
// written before done is closed and read only after.
type goServer struct {
	ln     net.Listener
	cancel context.CancelFunc
	done   chan struct{}
	// stopping is set before Stop cancels Serve's context: a Serve that
	// returns while it is false ended by itself.
	stopping atomic.Bool
	err      error
	early    bool

	mu    sync.Mutex // held across Stop: one stop, others wait for it
	final *Final
}

// serve runs fn, turning a panic of its goroutine into an error.
func (i *goServer) serve(ctx context.Context, fn func(context.Context, net.Listener) error) {
	defer close(i.done)
	defer func() {
		if p := recover(); p != nil {
			i.err = fmt.Errorf("Serve panicked: %v\n%s", p, debug.Stack())
		}
		i.early = !i.stopping.Load()
	}()
	i.err = fn(ctx, i.ln)
}

// probe has one byte echoed on a connection of its own before deadline,
// unless Serve returns first. A Serve that returns once it has echoed it
// is judged at Stop.
func (i *goServer) probe(deadline time.Time) error {
	bound := time.Until(deadline).Round(time.Millisecond)
	conn, err := net.DialTimeout("tcp", i.Addr(), time.Until(deadline))
	if err != nil {
		return fmt.Errorf("dialling its listener: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(deadline)
	watched := make(chan struct{})
	defer close(watched)
	go func() {
		select {
		case <-i.done: // Serve returned: the probe waits no more
			_ = conn.SetDeadline(time.Now())
		case <-watched:
		}
	}()
	got := []byte{0}
	_, err = conn.Write([]byte{'p'})
	if err == nil {
		_, err = io.ReadFull(conn, got)
	}
	switch {
	case err != nil:
		select {
		case <-i.done:
			return fmt.Errorf("Serve returned before it echoed a probe byte: %s", endText(i.err))
		default:
		}
		return fmt.Errorf("no echo of a probe byte within %v: %w", bound, err)
	case got[0] != 'p':
		return fmt.Errorf("a probe byte 'p' came back as %q: not a byte echo", got)
	}
	return nil
}

// endText says how Serve ended.
func endText(err error) string {
	if err == nil {
		return "Serve returned nil"
	}
	return "Serve returned: " + err.Error()
}

func (i *goServer) Addr() string                   { return i.ln.Addr().String() }
func (i *goServer) ControlAddr() string            { return "" }
func (i *goServer) Reference() *Reference          { return nil }
func (i *goServer) Stats() (reactors.Stats, error) { return reactors.Stats{}, ErrUnsupported }

// Usage is the whole test process's CPU (getrusage): see GoServer.
func (i *goServer) Usage() (Usage, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return Usage{}, fmt.Errorf("getrusage: %w", err)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return Usage{CPU: cpu, RunqWait: -1, RSS: -1, Fds: -1}, nil
}

// Stop cancels Serve's context, closes the listener and waits for Serve to
// return, at most goServerStopBound.
func (i *goServer) Stop() (Final, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.final != nil {
		return *i.final, nil
	}
	i.stopping.Store(true)
	i.cancel()
	_ = i.ln.Close()
	timer := time.NewTimer(goServerStopBound)
	defer timer.Stop()
	f := Final{Clean: true}
	select {
	case <-i.done:
		f.Exit = endText(i.err)
		switch {
		case i.early:
			f.Clean = false
			f.Exit += ", before it was stopped"
		case i.err != nil && !errors.Is(i.err, context.Canceled) && !errors.Is(i.err, net.ErrClosed):
			f.AtStop = f.Exit
		}
	case <-timer.C:
		f.Exit = fmt.Sprintf("Serve did not return within %v of its context's cancellation and its listener's close (its goroutine is left running)", goServerStopBound)
		f.AtStop = f.Exit
	}
	i.final = &f
	return f, nil
}
