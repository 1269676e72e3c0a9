//go:build linux

package cases_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/reactorlab/reactorlab/conformance"
)

// copyEcho is the goroutine-per-connection echo a Go user writes first:
// io.Copy, which writes everything it has read before it reads again.
func copyEcho(ctx context.Context, ln net.Listener) error {
	var conns sync.WaitGroup
	defer conns.Wait()
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			stop := context.AfterFunc(ctx, func() { c.Close() })
			defer stop()
			io.Copy(c, c)
			c.Close()
		}()
	}
}

// A server that writes everything before it reads again never holds
// echoes when it reads a FIN: I3 and W4 are inconclusive by its design,
// the same every run (so Strict passes it), never a pass by a lucky draw
// nor a plain inconclusive that Strict fails; in the test's own process,
// without counters, I2 cannot see what the server holds and is skipped.
func TestCopyEchoIsInconclusiveByDesign(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: I3 and W4 fill three connections each (12 s)")
	}
	t.Parallel() // beside the other runs of whole catalogues: see TestMain
	results, err := conformance.RunAll(context.Background(), conformance.GoServer{Label: "io.Copy", Serve: copyEcho}, mustSelect(t, []string{"W4", "I3", "I2"}), conformance.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		t.Logf("%s %s (by design: %v): %s", r.ID, r.Verdict, r.ByDesign, r.Reason)
		switch r.ID {
		case "W4", "I3":
			if r.Verdict != conformance.Inconclusive || !r.ByDesign {
				t.Errorf("%s: %s (by design: %v), want inconclusive by the server's design: %s\n%v", r.ID, r.Verdict, r.ByDesign, r.Reason, r.Evidence)
			}
		case "I2":
			if r.Verdict != conformance.Skip {
				t.Errorf("I2 on an in-process server without counters: %s, want skip: %s", r.Verdict, r.Reason)
			}
		}
	}
}
