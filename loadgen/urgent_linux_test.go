//go:build linux

package loadgen_test

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
)

// urgentRun runs cfg and checks what holds whatever the target did with
// the urgent bytes: the run ends within its bound, the urgent counts
// balance over the connections and in total, and the data ledger is
// untouched (balanced, nothing lost or corrupted).
func urgentRun(t *testing.T, cfg loadgen.Config) *loadgen.Result {
	t.Helper()
	cfg = cfg.WithDefaults()
	bound := cfg.ConnectTimeout + cfg.Warmup + cfg.Duration + cfg.Drain + time.Second
	start := time.Now()
	res, err := loadgen.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > bound {
		t.Errorf("the run took %v, more than its bound %v", took, bound)
	}
	u := res.Urgent
	if u == nil {
		t.Fatal("no urgent outcome with urgent-every set")
	}
	var sum loadgen.UrgentOutcome
	for _, c := range res.Conns {
		switch {
		case c.Kind == "control" && c.Urgent != nil:
			t.Errorf("%s: urgent outcome on a control connection", c.Name)
		case c.Kind != "control" && c.Urgent == nil:
			t.Errorf("%s: no urgent outcome", c.Name)
		case c.Kind != "control":
			if !c.Urgent.Balanced() {
				t.Errorf("%s: urgent counts do not balance: %+v", c.Name, *c.Urgent)
			}
			sum.Sent += c.Urgent.Sent
			sum.Answered += c.Urgent.Answered
			sum.Mismatched += c.Urgent.Mismatched
			sum.Unanswered += c.Urgent.Unanswered
			sum.Skipped += c.Urgent.Skipped
			sum.NotSent += c.Urgent.NotSent
			sum.Unsolicited += c.Urgent.Unsolicited
		}
	}
	if sum != *u || !u.Balanced() {
		t.Errorf("urgent total %+v, connections sum to %+v", *u, sum)
	}
	if tot := res.Totals; !tot.Balanced() || tot.Lost+tot.CorruptedAnswers+tot.Unexpected+tot.Duplicated != 0 || tot.Echoed == 0 {
		t.Errorf("the data class was disturbed: %+v", tot)
	}
	if s := res.Summary(); s.Urgent == nil || *s.Urgent != *u {
		t.Errorf("summary's urgent %+v, want %+v", s.Urgent, *u)
	}
	return res
}

// urgentLatencies is the urgent class's measured count and histogram max.
func urgentLatencies(t *testing.T, res *loadgen.Result) (count int64, maxNs int64) {
	t.Helper()
	h, ok := res.Recorder.Histogram(loadgen.ClassUrgent)
	if !ok {
		t.Fatal("no urgent class")
	}
	return h.TotalCount(), h.Max()
}

// ticks is the number of urgent ticks intended in d at one per every.
func ticks(d, every time.Duration) uint64 { return uint64(d / every) }

// TestUrgentAnswered: a target that answers every urgent byte at once:
// every byte sent is answered and measured, each data connection carries
// its share, the data frames are all echoed, and the run is valid.
func TestUrgentAnswered(t *testing.T) {
	t.Parallel() // its own server; counts decide, not timings
	const every, d = 10 * time.Millisecond, 600 * time.Millisecond
	addr := startUrgentServer(t, promptAnswer)
	res := urgentRun(t, loadgen.Config{DataAddr: addr, Hot: 2, InFlight: 4, UrgentEvery: every, Duration: d, Drain: 500 * time.Millisecond})
	u := res.Urgent
	count, maxNs := urgentLatencies(t, res)
	t.Logf("urgent %+v; %d latencies, max %v", *u, count, time.Duration(maxNs))
	if !res.Valid {
		t.Errorf("invalid: %q", res.Invalid)
	}
	// Every tick is sent or counted as never sent, and every byte sent is
	// answered. (Skips are not bounded: each connection's ticks are 20 ms
	// apart and a prompt answer takes tens of µs, but a loaded machine
	// can hold the test's server back for longer.)
	if want := ticks(d, every); u.Sent+u.NotSent < want-1 || u.Sent+u.NotSent > want+1 || u.Sent < 10 ||
		u.Answered != u.Sent || u.Unanswered != 0 || u.Mismatched+u.Unsolicited != 0 {
		t.Errorf("urgent %+v, want %d ticks sent or not sent, every one sent answered", *u, want)
	}
	if uint64(count) != u.Answered {
		t.Errorf("%d urgent latencies recorded, %d answered (no warm-up: all measured)", count, u.Answered)
	}
	for _, c := range res.Conns { // the two take turns: half the ticks each
		if n, half := c.Urgent.Sent+c.Urgent.NotSent, ticks(d, every)/2; n+1 < half || n > half+1 {
			t.Errorf("%s had %d of the %d ticks: the connections do not take turns", c.Name, n, 2*half)
		}
	}
}

// startReadEcho is a byte echo that reads with read(2) and writes back
// what it read, as most servers do. (Not io.Copy: between two TCP
// connections it splices, and splice(2) stops at an urgent mark for good,
// never stepping over the byte as read(2) does.)
func startReadEcho(t *testing.T) string {
	return serveEach(t, func(c net.Conn) {
		defer c.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
	})
}

// TestUrgentNeverAnswered: a byte echo never answers urgent bytes (its
// in-band reads step over them). Each data connection sends one, waits,
// and skips every tick after it; the run ends on time, invalid for the
// unanswered bytes only: the frame stream is intact.
func TestUrgentNeverAnswered(t *testing.T) {
	t.Parallel() // its own server; counts decide, not timings
	const every, d = 10 * time.Millisecond, 400 * time.Millisecond
	addr := startReadEcho(t)
	res := urgentRun(t, loadgen.Config{DataAddr: addr, Hot: 1, InFlight: 4, Steady: 1, Rate: 1000,
		UrgentEvery: every, Duration: d, Drain: time.Second})
	u := res.Urgent
	t.Logf("urgent %+v; invalid %q", *u, res.Invalid)
	if want := ticks(d, every); u.Sent != 2 || u.Unanswered != 2 || u.Answered != 0 ||
		u.Skipped+u.Sent < want-1 || u.Skipped+u.Sent > want+1 || u.NotSent != u.Skipped {
		t.Errorf("urgent %+v: want 2 sent and unanswered, the other %d ticks skipped and not sent", *u, want-2)
	}
	if count, _ := urgentLatencies(t, res); count != 0 {
		t.Errorf("%d urgent latencies without an answer", count)
	}
	if res.Valid || len(res.Invalid) != 1 || !strings.Contains(res.Invalid[0], "urgent: 2 of 2 urgent bytes unanswered when the run ended (after a drain of 1s)") {
		t.Errorf("invalid %q, want the unanswered urgent bytes alone", res.Invalid)
	}
}

// TestUrgentWrongByte: a target that answers each urgent byte with
// another value: every answer is counted as mismatched, none measured,
// and the run is invalid saying so; the data class is untouched.
func TestUrgentWrongByte(t *testing.T) {
	t.Parallel() // its own server; counts decide, not timings
	addr := startUrgentServer(t, func(_ int, b byte) (byte, time.Duration, bool) { return ^b, 0, true })
	res := urgentRun(t, loadgen.Config{DataAddr: addr, Hot: 1, InFlight: 4, UrgentEvery: 10 * time.Millisecond,
		Duration: 300 * time.Millisecond, Drain: time.Second})
	u := res.Urgent
	t.Logf("urgent %+v; invalid %q", *u, res.Invalid)
	if want := ticks(300*time.Millisecond, 10*time.Millisecond); u.Sent < 3 || u.Sent+u.NotSent < want-1 || u.Sent+u.NotSent > want+1 ||
		u.Mismatched != u.Sent || u.Answered != 0 {
		t.Errorf("urgent %+v: want %d ticks sent or not sent, every one sent mismatched", *u, want)
	}
	if count, _ := urgentLatencies(t, res); count != 0 {
		t.Errorf("%d urgent latencies from wrong answers", count)
	}
	reason := "urgent: " + strconv.FormatUint(u.Mismatched, 10) + " answers with a byte other than the one outstanding"
	if res.Valid || !strings.Contains(strings.Join(res.Invalid, "\n"), reason) {
		t.Errorf("invalid %q, want %q", res.Invalid, reason)
	}
	if ev := strings.Join(res.Conns[0].Evidence, "\n"); !strings.Contains(ev, "answered with") {
		t.Errorf("evidence %q names no wrong answer", ev)
	}
}

// TestUrgentOff: without urgent-every there is no urgent class, outcome
// or connection share, and the JSON form has no trace of it.
func TestUrgentOff(t *testing.T) {
	t.Parallel() // its own server; counts decide, not timings
	addr := startByteEcho(t)
	res, err := loadgen.Run(context.Background(), loadgen.Config{DataAddr: addr, Hot: 1, InFlight: 1, Duration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Recorder.Histogram(loadgen.ClassUrgent); ok || res.Urgent != nil || res.Conns[0].Urgent != nil || res.Summary().Urgent != nil {
		t.Errorf("urgent traces without urgent-every: %+v %+v", res.Urgent, res.Conns[0].Urgent)
	}
	b, err := json.Marshal(res.Summary())
	if err != nil || strings.Contains(string(b), "urgent") {
		t.Errorf("summary JSON (%v) mentions urgent: %s", err, b)
	}
}

// TestUrgentCoordinatedOmission: a target that holds the answer to one
// urgent byte for S, in a run with one data connection and a tick every
// P. The ticks of the stall are skipped (about H/P of them, H the hold as
// the target measured it, from reading the byte to sending its answer:
// at least S) and then sent one after the other, each measured from its
// own intended time, so the urgent class shows the stall as a client on
// schedule would have seen it: latencies spread over [0, H], about
// H/(2P) of them above H/2 (a latency taken from the actual send would
// leave one: the held byte's).
//
// The bounds. The held byte's latency is at least H + L, L its tick's
// lateness at the target (from the tick's intended time, in wall-clock
// time from the Result's Start, to the target's read: the generator's
// lateness in sending it and the transit, tens of µs; more if earlier
// answers were late, which holds ticks back), and at most that plus the
// transit back and the generator's lateness in reading it (tens of µs;
// tens of ms on a loaded machine): maxHigh = 60 ms. (L is measured on two
// clocks, wall and monotonic, which agree to µs over a run.)
// Tick j after it was intended (H − j·P) before the answer and is
// answered j round trips after it, so at least the ticks j < H/(2P) are
// above H/2: the lower bound H/(2P) − 1 (the boundary tick) is what shows
// the correction. The count can only grow with load (every latency is
// later), up to at most the ticks of the stall and its catch-up (H/P +
// 5, when no round trip took less than P). Skips: at least the ticks
// intended while the byte was held, H/P − 1; a loaded machine skips more
// (any answer later than P skips a tick), never fewer.
//
// The run is 2 s; with -short 1.2 s, which still leaves 200 ms of ticks
// after the held answer (about 1 s in) for the catch-up, a few ms.
func TestUrgentCoordinatedOmission(t *testing.T) {
	const (
		every   = 10 * time.Millisecond
		stall   = 500 * time.Millisecond
		held    = 50 // the 51st urgent byte, intended at 0.5 s
		maxHigh = 60 * time.Millisecond
	)
	d := 2 * time.Second
	if testing.Short() {
		d = 1200 * time.Millisecond
	}
	type span struct{ read, sent time.Time }
	hold := make(chan span, 1)
	addr := startObservedUrgentServer(t, func(n int, b byte) (byte, time.Duration, bool) {
		if n == held {
			return b, stall, true
		}
		return b, 0, true
	}, func(n int, read, sent time.Time) {
		if n == held {
			hold <- span{read, sent}
		}
	})
	res := urgentRun(t, loadgen.Config{DataAddr: addr, Hot: 1, InFlight: 1, UrgentEvery: every, Duration: d, Drain: time.Second})
	var h, late time.Duration
	select {
	case sp := <-hold:
		h, late = sp.sent.Sub(sp.read), sp.read.Sub(res.Start.Add(time.Duration(held)*every))
	default:
		t.Fatal("the held byte was never answered")
	}
	u := res.Urgent
	hist, _ := res.Recorder.Histogram(loadgen.ClassUrgent)
	var above int64 // latencies above H/2, to the histogram's precision
	for _, b := range hist.Distribution() {
		if b.From > int64(h/2) {
			above += b.Count
		}
	}
	t.Logf("held %v, read %v after its tick; urgent %+v; %d latencies above %v, max %v, p50 %v", h, late, *u, above, h/2, time.Duration(hist.Max()), time.Duration(hist.ValueAtPercentile(50)))
	if !res.Valid {
		t.Errorf("invalid: %q", res.Invalid)
	}
	// What load can only make larger holds on any machine.
	if lo := int64(h/every/2) - 1; above < lo {
		t.Errorf("%d latencies above %v, want at least %d: the stalled ticks are not measured from their intended times", above, h/2, lo)
	}
	if lo := uint64(h/every) - 1; u.Skipped < lo {
		t.Errorf("%d ticks skipped, want at least %d", u.Skipped, lo)
	}
	if want := ticks(d, every); u.Sent+u.NotSent < want-1 || u.Sent+u.NotSent > want+1 || u.Answered != u.Sent {
		t.Errorf("urgent %+v: want %d ticks sent or not sent, every one sent answered", *u, want)
	}
	// The upper bounds need a target and a generator that were prompt
	// outside the stall.
	if p50 := time.Duration(hist.ValueAtPercentile(50)); late > every || p50 > every/2 || u.NotSent > 0 {
		t.Skipf("inconclusive: the machine held the target or the generator back outside the stall (the held tick read %v after its tick, p50 %v, %d ticks never sent; want <= %v, <= %v, 0)",
			late, p50, u.NotSent, every, every/2)
	}
	if mx := time.Duration(hist.Max()); mx < h+late-time.Millisecond || mx > h+late+maxHigh {
		t.Errorf("max %v, want the held byte's latency in [%v, %v] (-1 ms: the histogram's precision and the two clocks)", mx, h+late-time.Millisecond, h+late+maxHigh)
	}
	if hi := int64(h/every) + 5; above > hi {
		t.Errorf("%d latencies above %v, want at most %d: more than the stall's ticks", above, h/2, hi)
	}
}
