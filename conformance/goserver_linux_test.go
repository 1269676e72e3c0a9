//go:build linux

package conformance_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/conformance/cases"
)

// echoServe serves a byte echo on ln, a goroutine per connection, until
// ctx is cancelled; then it closes the listener and every connection and
// returns ctx's error once their goroutines have.
func echoServe(ctx context.Context, ln net.Listener) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	stop := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	defer stop()
	for {
		c, err := ln.Accept()
		if err != nil {
			wg.Wait()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		if ctx.Err() != nil { // cancelled after AfterFunc closed the others
			c.Close()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(c, c)
			c.Close()
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}

// A GoServer instance is ready once its Serve echoes, measures the test
// process's CPU and nothing it cannot tell apart (-1), has no counters,
// and its Stop ends a Serve that honours its context cleanly; a
// descriptor limit is refused as unsupported, and a target with no Serve
// is refused at its start check, naming the field.
func TestGoServerInstance(t *testing.T) {
	target := conformance.GoServer{Label: "echo", Serve: echoServe}
	if got := target.Name(); got != "go:echo" {
		t.Errorf("Name() = %q, want go:echo", got)
	}
	inst, err := conformance.StartInstance(context.Background(), target, conformance.Setup{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", inst.Addr())
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(conn, got); err != nil || string(got) != "hello" {
		t.Errorf("echo: %q, %v", got, err)
	}
	u, err := inst.Usage()
	if err != nil || u.CPU <= 0 || u.RSS != -1 || u.Fds != -1 || u.RunqWait != -1 {
		t.Errorf("Usage() = %+v, %v: want the process's CPU and -1 for the rest", u, err)
	}
	if _, err := inst.Stats(); !errors.Is(err, conformance.ErrUnsupported) {
		t.Errorf("Stats() error %v, want ErrUnsupported", err)
	}
	if inst.Reference() != nil || inst.ControlAddr() != "" {
		t.Errorf("a Go server has no reference configuration or control address: %v, %q", inst.Reference(), inst.ControlAddr())
	}
	f, err := inst.Stop()
	if err != nil || !f.Clean || f.AtStop != "" {
		t.Errorf("Stop() = %+v, %v: want a clean end", f, err)
	}
	// Serve closed the connection it served when it was stopped.
	if _, err := conn.Read(got); err == nil {
		t.Errorf("the connection outlived the server's stop")
	}
	conn.Close()

	_, err = target.Start(context.Background(), conformance.Setup{FdLimit: 64})
	if !errors.Is(err, conformance.ErrUnsupported) || !strings.Contains(err.Error(), "descriptor limit") {
		t.Errorf("a descriptor limit: %v, want ErrUnsupported naming it", err)
	}
	err = conformance.CheckStart(context.Background(), conformance.GoServer{Label: "nil"}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "GoServer.Serve is nil") {
		t.Errorf("no Serve: %v, want an error naming GoServer.Serve", err)
	}
}

// How Serve ends is judged: returning at once fails the start, saying
// so; returning before the stop ends the instance badly during the case;
// an error that is not the stop's, a panic, or no return within the
// bound are findings at the stop.
func TestGoServerEnds(t *testing.T) {
	acceptOnce := func(ctx context.Context, ln net.Listener) error {
		c, err := ln.Accept() // the probe
		if err != nil {
			return err
		}
		defer c.Close()
		b := make([]byte, 1)
		if _, err := c.Read(b); err != nil {
			return err
		}
		_, err = c.Write(b)
		return err
	}
	for _, tc := range []struct {
		name     string
		serve    func(context.Context, net.Listener) error
		startErr string // in Start's error; "" if it starts
		clean    bool
		atStop   string // in Final.AtStop
	}{
		{"returns at once", func(context.Context, net.Listener) error { return errors.New("no loop today") }, "Serve returned before it echoed a probe byte: Serve returned: no loop today", false, ""},
		{"echoes no byte", func(ctx context.Context, ln net.Listener) error {
			c, err := ln.Accept()
			if err == nil {
				defer c.Close()
			}
			<-ctx.Done()
			return nil
		}, "no echo of a probe byte within", false, ""},
		{"returns during the case", func(ctx context.Context, ln net.Listener) error {
			if err := acceptOnce(ctx, ln); err != nil {
				return err
			}
			c, err := ln.Accept() // the test's, which it ends on
			if err == nil {
				c.Close()
			}
			return err
		}, "", false, ""},
		{"fails at the stop", func(ctx context.Context, ln net.Listener) error {
			if err := acceptOnce(ctx, ln); err != nil {
				return err
			}
			<-ctx.Done()
			return errors.New("lost a connection's echoes")
		}, "", true, "Serve returned: lost a connection's echoes"},
		{"panics at the stop", func(ctx context.Context, ln net.Listener) error {
			if err := acceptOnce(ctx, ln); err != nil {
				return err
			}
			<-ctx.Done()
			panic("a nil map")
		}, "", true, "Serve panicked: a nil map"},
		{"does not return", func(ctx context.Context, ln net.Listener) error {
			if err := acceptOnce(ctx, ln); err != nil {
				return err
			}
			select {} // left blocked on purpose: the end of the test binary reclaims it
		}, "", true, "Serve did not return within 5s"},
		{"returns the listener's close", func(ctx context.Context, ln net.Listener) error {
			if err := acceptOnce(ctx, ln); err != nil {
				return err
			}
			_, err := ln.Accept()
			return err
		}, "", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inst, err := conformance.StartInstance(context.Background(), conformance.GoServer{Label: "x", Serve: tc.serve}, conformance.Setup{}, 2*time.Second)
			if tc.startErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.startErr) {
					t.Fatalf("start: %v, want an error saying %q", err, tc.startErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.clean { // Serve returns once it has accepted a connection
				c, err := net.Dial("tcp", inst.Addr())
				if err != nil {
					t.Fatal(err)
				}
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				c.Read(make([]byte, 1)) // returns once Serve has closed it
				c.Close()
				// Serve returns the moment after it closed c; nothing
				// outside it shows that return, so the stop waits a while.
				time.Sleep(200 * time.Millisecond)
			}
			f, _ := inst.Stop()
			if f.Clean != tc.clean || !strings.Contains(f.AtStop, tc.atStop) || (tc.atStop == "") != (f.AtStop == "") {
				t.Errorf("Stop() = %+v, want clean %v, at stop %q", f, tc.clean, tc.atStop)
			}
		})
	}
}

// The catalogue runs on a Go server: what it can judge is judged, and
// the cases that need a descriptor limit, a process of its own or the
// reference protocol are skipped, each saying why.
func TestGoServerRunsTheCatalogue(t *testing.T) {
	ids := []string{"F1", "F2", "R4", "W1", "X3", "F4"}
	run, err := cases.Select(ids)
	if err != nil {
		t.Fatal(err)
	}
	results, err := conformance.RunAll(context.Background(), conformance.GoServer{Label: "echo", Serve: echoServe}, run, conformance.Options{Stop: conformance.StopSIGTERM})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		verdict conformance.Verdict
		reason  string
	}{
		"F1": {conformance.Pass, ""},
		"F2": {conformance.Pass, ""},
		"R4": {conformance.Skip, "descriptor limit"},
		"W1": {conformance.Skip, "memory"},
		"X3": {conformance.Skip, "a process of its own"},
		"F4": {conformance.Skip, "reference protocol"},
	}
	for _, r := range results {
		w := want[r.ID]
		if r.Verdict != w.verdict || !strings.Contains(r.Reason, w.reason) {
			t.Errorf("%s: %s (%s), want %s saying %q; evidence: %v", r.ID, r.Verdict, r.Reason, w.verdict, w.reason, r.Evidence)
		}
	}
}
