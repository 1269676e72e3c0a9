//go:build linux

// Package reactortest drives a reference reactor end to end from a Go test:
// start it, push echo traffic through real sockets and check every byte,
// stop it with a STOP frame and check the ledger, and check that nothing
// (goroutine, descriptor) outlives it. It is the shared harness of the
// per-design tests; the conformance suite builds on the same ideas.
package reactortest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/procfs"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/wire"
)

// Leaks is a snapshot of what a reactor could leave behind.
type Leaks struct {
	Goroutines int
	Fds        int
}

// TakeLeaks counts goroutines and open descriptors of this process.
func TakeLeaks() Leaks {
	fds, _ := procfs.CountFds(procfs.Self)
	return Leaks{Goroutines: runtime.NumGoroutine(), Fds: fds}
}

// CheckNoLeaks fails t if, within 5 s, the goroutine and descriptor counts
// do not return to before's (goroutines of the runtime and the testing
// package settle asynchronously, hence the bounded wait, which ends as soon
// as the counts match).
func CheckNoLeaks(t testing.TB, before Leaks) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		now := TakeLeaks()
		if now.Goroutines <= before.Goroutines && now.Fds <= before.Fds {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("leak after shutdown: goroutines %d → %d, fds %d → %d\n%s",
				before.Goroutines, now.Goroutines, before.Fds, now.Fds, buf[:n])
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond) // polling a count, not synchronising: nothing to wait on
	}
}

// Start builds and starts a reactor and makes sure it is stopped when the
// test ends. A completion design where io_uring is unavailable
// (reactors.ErrNoCompletion) skips the test with the kernel's reason.
func Start(t testing.TB, design reactors.DesignName, cfg reactors.Config) *reactors.Reactor {
	t.Helper()
	r, err := designs.New(design, cfg)
	if errors.Is(err, reactors.ErrNoCompletion) {
		t.Skipf("%s: %v", design, err)
	}
	if err != nil {
		t.Fatalf("new %s: %v", design, err)
	}
	r.Start()
	t.Cleanup(func() {
		if _, err := r.Stop(); err != nil {
			t.Errorf("stop %s: %v", design, err)
		}
		if _, err := r.Wait(); err != nil {
			t.Errorf("wait %s: %v", design, err)
		}
	})
	return r
}

// Sizes draws frame payload sizes from 1 B to 256 KiB: mostly small, some
// medium, a few large, like mixed traffic. The first two sizes of every
// stream are the extremes, so each stream carries both.
func Sizes(rng *rand.Rand, n int) []int {
	out := make([]int, n)
	for i := range out {
		switch p := rng.IntN(100); {
		case i == 0:
			out[i] = 1
		case i == 1:
			out[i] = 256 << 10
		case p < 90:
			out[i] = 1 + rng.IntN(1024)
		case p < 99:
			out[i] = 1024 + rng.IntN(63<<10)
		default:
			out[i] = 64<<10 + rng.IntN(192<<10+1)
		}
	}
	return out
}

// Payload fills p with bytes derived from (conn, seq) (wire.FillPattern),
// so a frame delivered to the wrong connection, or reordered, or
// corrupted, is detected.
func Payload(p []byte, conn, seq uint64) { wire.FillPattern(p, conn, seq) }

// EchoResult is what one connection saw.
type EchoResult struct {
	Sent, Echoed, Rejected int
}

// Echo opens conns connections to addr; each sends the frames sized by sizes
// (DATA, token = connection number, seq = index) while reading the echoes
// concurrently, and checks every echo: kind, token, seq, length and payload
// bytes, in order. It returns the first violation as an error with the
// evidence, or nil. timeout bounds the whole exchange.
func Echo(addr string, conns int, sizes []int, timeout time.Duration) error {
	var wg sync.WaitGroup
	errs := make([]error, conns)
	deadline := time.Now().Add(timeout)
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[c] = echoConn(addr, uint64(c+1), sizes, deadline)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func echoConn(addr string, token uint64, sizes []int, deadline time.Time) error {
	conn, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return fmt.Errorf("conn %d: dial: %w", token, err)
	}
	defer conn.Close()
	conn.SetDeadline(deadline)
	werr := make(chan error, 1)
	go func() {
		var buf []byte
		for seq, n := range sizes {
			payload := make([]byte, n)
			Payload(payload, token, uint64(seq))
			buf = wire.AppendFrame(buf[:0], wire.KindData, 0, token, uint64(seq), uint64(seq), payload)
			if _, err := conn.Write(buf); err != nil {
				werr <- fmt.Errorf("conn %d: write frame %d: %w", token, seq, err)
				return
			}
		}
		werr <- nil
	}()
	dec := wire.NewDecoder(wire.DefaultMaxFrame)
	rbuf := make([]byte, 64<<10)
	want := make([]byte, 0, 256<<10)
	for seq := 0; seq < len(sizes); {
		h, payload, ok, err := dec.Next()
		if err != nil {
			return fmt.Errorf("conn %d: decode after %d echoes: %w", token, seq, err)
		}
		if !ok {
			n, err := conn.Read(rbuf)
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return fmt.Errorf("conn %d: read after %d of %d echoes: %w", token, seq, len(sizes), err)
			}
			dec.Write(rbuf[:n])
			continue
		}
		if h.Kind != wire.KindData || h.Token != token || h.Seq != uint64(seq) || len(payload) != sizes[seq] {
			return fmt.Errorf("conn %d: echo %d: got kind %v token %d seq %d len %d, want DATA token %d seq %d len %d",
				token, seq, h.Kind, h.Token, h.Seq, len(payload), token, seq, sizes[seq])
		}
		want = want[:sizes[seq]]
		Payload(want, token, uint64(seq))
		if !bytes.Equal(payload, want) {
			i := 0
			for i < len(want) && payload[i] == want[i] {
				i++
			}
			return fmt.Errorf("conn %d: echo %d: payload differs at byte %d of %d", token, seq, i, len(want))
		}
		seq++
	}
	return <-werr
}

// MonoNow is CLOCK_MONOTONIC in ns, the clock STOP frames carry.
func MonoNow() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// StopFrame sends STOP on a new control connection to ctl and returns the
// ledger from STOP_ACK, skipping any other frame.
func StopFrame(ctl string, timeout time.Duration) (wire.Ledger, error) {
	conn, err := net.DialTimeout("tcp", ctl, timeout)
	if err != nil {
		return wire.Ledger{}, fmt.Errorf("dial control: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(wire.AppendFrame(nil, wire.KindStop, 0, 0, 1, MonoNow(), nil)); err != nil {
		return wire.Ledger{}, fmt.Errorf("send STOP: %w", err)
	}
	dec := wire.NewDecoder(wire.DefaultMaxFrame)
	buf := make([]byte, 4096)
	var seen []string
	for {
		h, payload, ok, err := dec.Next()
		if err != nil {
			return wire.Ledger{}, fmt.Errorf("decode control: %w", err)
		}
		if ok {
			if h.Kind == wire.KindStopAck {
				return wire.DecodeLedger(payload)
			}
			seen = append(seen, h.Kind.String())
			continue
		}
		n, err := conn.Read(buf)
		if err != nil {
			return wire.Ledger{}, fmt.Errorf("waiting for STOP_ACK (saw %s): %w", strings.Join(seen, ","), err)
		}
		dec.Write(buf[:n])
	}
}

// EndToEnd is the per-design acceptance test: 16 connections × 1,000 DATA
// frames of mixed sizes (1 B .. 256 KiB) echoed intact and in order; STOP
// on the control address answered by a balanced ledger that accounts for
// exactly those frames; a clean exit; no goroutine or descriptor left.
func EndToEnd(t *testing.T, newReactor func(reactors.Config) (*reactors.Reactor, error), cfg reactors.Config) reactors.Stats {
	const conns, frames = 16, 1000
	before := TakeLeaks()
	r, err := newReactor(cfg)
	if errors.Is(err, reactors.ErrNoCompletion) {
		t.Skipf("new: %v", err)
	}
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	design := r.Design()
	r.Start()
	stopped := false
	defer func() {
		if !stopped {
			r.Stop()
			r.Wait()
		}
	}()
	rng := rand.New(rand.NewPCG(1, uint64(len(design))))
	if err := Echo(r.Addr().String(), conns, Sizes(rng, frames), 90*time.Second); err != nil {
		t.Fatalf("%s echo: %v\nstats: %+v", design, err, r.Stats().Counters)
	}
	ledger, err := StopFrame(r.ControlAddr().String(), 30*time.Second)
	if err != nil {
		t.Fatalf("%s STOP: %v", design, err)
	}
	if !ledger.Balanced() || ledger.Accepted != conns*frames || ledger.Completed != conns*frames {
		t.Fatalf("%s STOP_ACK ledger %+v: want accepted = completed = %d, rejected 0", design, ledger, conns*frames)
	}
	stats, err := r.Wait()
	stopped = true
	if err != nil {
		t.Fatalf("%s exit: %v", design, err)
	}
	if stats.Ledger.Accepted != ledger.Accepted || stats.Ledger.Completed != ledger.Completed {
		t.Fatalf("%s final ledger %+v differs from STOP_ACK %+v", design, stats.Ledger, ledger)
	}
	if stats.Counters.FramesEchoed != conns*frames {
		t.Fatalf("%s echoed %d frames, want %d", design, stats.Counters.FramesEchoed, conns*frames)
	}
	CheckNoLeaks(t, before)
	return stats
}
