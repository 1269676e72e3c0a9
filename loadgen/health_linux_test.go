//go:build linux

package loadgen_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/wire"
)

// startSlowPinger is a target that answers the n-th PING of each
// connection (from 0) after delay(n), one PING at a time, and echoes
// nothing else.
func startSlowPinger(t *testing.T, delay func(n int) time.Duration) string {
	return serveEach(t, func(c net.Conn) {
		defer c.Close()
		dec := wire.NewDecoder(0)
		buf := make([]byte, 4096)
		n := 0
		for {
			k, err := c.Read(buf)
			dec.Write(buf[:k])
			for {
				h, p, ok, derr := dec.Next()
				if derr != nil || !ok {
					break
				}
				if h.Kind == wire.KindPing {
					time.Sleep(delay(n))
					n++
				}
				if _, werr := c.Write(wire.AppendFrame(nil, h.Kind, h.Flags, h.Token, h.Seq, h.SendNs, p)); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
}

// healthRun runs control probes alone against addr and returns the
// result, which must be valid and carry a health check.
func healthRun(t *testing.T, cfg loadgen.Config) *loadgen.Result {
	t.Helper()
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid || res.HealthCheck == nil {
		t.Fatalf("valid %v %q, health check %v", res.Valid, res.Invalid, res.HealthCheck)
	}
	return res
}

// measuredPings is the number of PINGs answered in the measured period
// (the "control" class's count).
func measuredPings(t *testing.T, res *loadgen.Result) uint64 {
	t.Helper()
	h, ok := res.Recorder.Histogram(loadgen.ClassControl)
	if !ok {
		t.Fatal("no control class")
	}
	return uint64(h.TotalCount())
}

// TestHealthCheckSlowTarget: a target that answers every PING after twice
// the timeout gives a false timeout per measured PING (the warm-up's left
// out) and a false removal per K of them; the counts reach the summary.
func TestHealthCheckSlowTarget(t *testing.T) {
	const timeout = 10 * time.Millisecond
	addr := startSlowPinger(t, func(int) time.Duration { return 2 * timeout })
	// PINGs every 40 ms answered after 20 ms: answers at 20, 60, ..., 180,
	// 220 ms, none near the end of the 200 ms warm-up.
	res := healthRun(t, loadgen.Config{DataAddr: addr, ControlEvery: 40 * time.Millisecond, ControlTimeout: timeout,
		Duration: 400 * time.Millisecond, Warmup: 200 * time.Millisecond, Drain: 200 * time.Millisecond})
	hc, pings := res.HealthCheck, measuredPings(t, res)
	t.Logf("%d measured PINGs of %d sent: %+v", pings, res.ControlTotals.Sent, *hc)
	if pings < 5 || hc.FalseTimeouts != pings || hc.FalseRemovals != pings/loadgen.DefaultRemovalAfter {
		t.Errorf("%d measured PINGs: %d false timeouts, %d false removals; want %d and %d",
			pings, hc.FalseTimeouts, hc.FalseRemovals, pings, pings/loadgen.DefaultRemovalAfter)
	}
	if res.ControlTotals.Echoed <= pings {
		t.Errorf("%d PINGs echoed, %d measured: the warm-up's are not left out of the test", res.ControlTotals.Echoed, pings)
	}
	if s := res.Summary(); s.HealthCheck == nil || *s.HealthCheck != *hc || s.Conns[0].HealthCheck == nil || *s.Conns[0].HealthCheck != *hc {
		t.Errorf("summary %+v, connection %+v; want %+v", s.HealthCheck, s.Conns[0].HealthCheck, *hc)
	}
}

// TestHealthCheckPromptTarget: PINGs answered at once: no false timeout,
// no removal.
func TestHealthCheckPromptTarget(t *testing.T) {
	addr := startSlowPinger(t, func(int) time.Duration { return 0 })
	res := healthRun(t, loadgen.Config{DataAddr: addr, ControlEvery: 10 * time.Millisecond, ControlTimeout: 100 * time.Millisecond,
		Duration: 300 * time.Millisecond, Drain: 200 * time.Millisecond})
	if hc, pings := res.HealthCheck, measuredPings(t, res); pings < 10 || hc.FalseTimeouts != 0 || hc.FalseRemovals != 0 {
		t.Errorf("%d measured PINGs: %+v, want none false", pings, *hc)
	}
}

// TestHealthCheckPattern: answers late, late, in time, late, late, late
// (then in time) with K = 3 are 5 false timeouts and 1 false removal.
func TestHealthCheckPattern(t *testing.T) {
	const timeout = 20 * time.Millisecond
	late := []bool{true, true, false, true, true, true}
	addr := startSlowPinger(t, func(n int) time.Duration {
		if n < len(late) && late[n] {
			return 2 * timeout
		}
		return 0
	})
	res := healthRun(t, loadgen.Config{DataAddr: addr, ControlEvery: 100 * time.Millisecond, ControlTimeout: timeout, RemovalAfter: 3,
		Duration: 900 * time.Millisecond, Drain: 200 * time.Millisecond})
	if hc, pings := res.HealthCheck, measuredPings(t, res); pings < 7 || hc.FalseTimeouts != 5 || hc.FalseRemovals != 1 {
		t.Errorf("%d measured PINGs: %+v, want 5 false timeouts and 1 false removal", pings, *hc)
	}
}

// TestHealthCheckOnlyWithProbes: without control probes there is no
// health check in the result.
func TestHealthCheckOnlyWithProbes(t *testing.T) {
	addr := startByteEcho(t)
	res, err := loadgen.Run(context.Background(), loadgen.Config{DataAddr: addr, Hot: 1, InFlight: 1, Duration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.HealthCheck != nil || res.Summary().HealthCheck != nil {
		t.Errorf("health check %+v without control probes", res.HealthCheck)
	}
}
