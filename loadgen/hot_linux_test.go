//go:build linux

package loadgen_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/wire"
)

// TestHotClosedLoop holds a hot source's frames in a gated fake target and
// checks the closed loop step by step: exactly K frames in flight, then
// exactly n new frames after n echoes sent back in one write, and those n
// in one write.
func TestHotClosedLoop(t *testing.T) {
	t.Parallel()
	const k = 8
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	verdict := make(chan error, 1)
	runDone := make(chan struct{})
	go func() {
		verdict <- gate(ln, k, []int{3, 1, 8, 5}, cancel, runDone)
	}()
	res, err := loadgen.Run(ctx, loadgen.Config{DataAddr: ln.Addr().String(), Hot: 1, InFlight: k, Duration: time.Minute})
	close(runDone)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-verdict; err != nil {
		t.Fatal(err)
	}
	c := res.Conns[0]
	if c.MaxInFlight != k || !res.Interrupted || c.Sent != c.Echoed+c.Unanswered || c.Unanswered != k || !res.Valid {
		t.Fatalf("result %+v, interrupted %v, invalid %q", c, res.Interrupted, res.Invalid)
	}
}

// gate accepts one connection and plays the closed-loop protocol: it
// expects k frames and no more, then for each n of releases echoes n of the
// held frames in one write and expects exactly n new frames in one read.
// Then it calls end and keeps the connection open until runDone is closed
// (closing it first would lose the frames in flight).
func gate(ln net.Listener, k int, releases []int, end func(), runDone <-chan struct{}) error {
	defer end()
	conn, err := ln.Accept()
	if err != nil {
		return err
	}
	defer func() {
		end()
		<-runDone
		conn.Close()
	}()
	var held [][]byte
	dec := wire.NewDecoder(0)
	buf := make([]byte, 64<<10)
	// expect reads exactly n frames, in reads reported by the count.
	expect := func(n int) (reads int, err error) {
		got := 0
		for got < n {
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			m, err := conn.Read(buf)
			if err != nil {
				return reads, fmt.Errorf("waiting for frame %d of %d: %w", got+1, n, err)
			}
			reads++
			dec.Write(buf[:m])
			for {
				h, p, ok, err := dec.Next()
				if err != nil {
					return reads, err
				}
				if !ok {
					break
				}
				got++
				held = append(held, wire.AppendFrame(nil, h.Kind, h.Flags, h.Token, h.Seq, h.SendNs, p))
			}
		}
		if got > n {
			return reads, fmt.Errorf("%d frames in flight, want %d", got, n)
		}
		// Nothing more may come while nothing is echoed.
		conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if m, err := conn.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			return reads, fmt.Errorf("%d more bytes arrived with %d frames in flight (%v)", m, n, err)
		}
		return reads, nil
	}
	if _, err := expect(k); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	for _, n := range releases {
		var out []byte
		for _, f := range held[:n] {
			out = append(out, f...)
		}
		held = held[n:]
		if _, err := conn.Write(out); err != nil {
			return err
		}
		reads, err := expect(n)
		if err != nil {
			return fmt.Errorf("after echoing %d: %w", n, err)
		}
		if reads != 1 {
			return fmt.Errorf("after echoing %d in one write, the %d new frames came in %d reads, want one write", n, n, reads)
		}
	}
	return nil
}
