package cases

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/wire"
)

// The admission case's load: admConns data connections, each starting
// with a backlog of admBacklog frames and then sending one frame every
// admPeriod, each frame costing admCost: admConns / admPeriod = 5,000
// frames a second against one loop's 1 / admCost = 2,500, twice its
// capacity. The bucket admits half the capacity.
const (
	admConns   = 50
	admBacklog = 64
	admPeriod  = 10 * time.Millisecond
	admCost    = 400 * time.Microsecond
	admRate    = 1250 // tokens a second: half of 1 / admCost
	admBurst   = 16
	// admRejectCost is what one REJECT costs a loop (parse, answer; no
	// callback), generously.
	admRejectCost = 5 * time.Microsecond
	// A PING may wait admMargin times the round the bucket allows, at
	// least admFloor: that absorbs a loaded, descheduled VM.
	admMargin = 10
	admFloor  = 250 * time.Millisecond
)

// a1Case is A1: with a token-bucket admission limit at twice the loop's
// capacity, PINGs on the control address are answered within the bound the
// bucket allows, and every DATA frame is answered.
func a1Case() conformance.Case {
	cfg := reactors.DefaultConfig()
	admissionTweak(reactors.LT, &cfg)
	_, arithmetic := a1PingLimit(cfg)
	return conformance.Case{
		ID:    "A1",
		Title: "control latency bounded at 2× overload with admission limiting",
		Claim: fmt.Sprintf("with a token-bucket admission limit, PINGs every %v on the control address are answered within the bound the bucket allows while %d data connections offer twice the loop's capacity, and every DATA frame is answered, by its echo or a REJECT", probeEvery, admConns),
		Bound: fmt.Sprintf("PING round trips within the bound the bucket allows (burst served, every connection's input budget refused, over the loop's share the rate leaves): %s; %s. Without the limit a flat loop's round is every connection's turn, each up to the %v time budget: about 1 s",
			arithmetic, overBoundRule, cfg.Budgets.Time),
		Needs: conformance.NeedReference | conformance.NeedControl | conformance.NeedStats,
		Setup: conformance.Setup{Tweak: admissionTweak},
		Run:   runA1,
	}
}

// admissionTweak configures the admission case's reactor: the frame cost,
// a bucket of admBurst tokens at admRate engaged after one saturated
// round, and turns long enough (64 frames, 20 ms, a clock read every 4
// frames) that an unlimited loop's round at 2× overload lasts about a
// second.
func admissionTweak(_ reactors.DesignName, cfg *reactors.Config) {
	cfg.Callback = fmt.Sprintf("fixed:%v", admCost)
	cfg.Admission = fmt.Sprintf("token-bucket:%d/%d", admRate, admBurst)
	cfg.AdmissionAfter = 1
	cfg.Budgets.Input = 64
	cfg.Budgets.Time = 20 * time.Millisecond
	cfg.Budgets.ClockEvery = 4
}

// a1PingLimit is A1's limit on a PING's round trip, from the reference
// configuration: admMargin times the round the bucket allows (its burst
// served, every connection's input budget refused, stretched by the share
// of the loop the admitted rate takes), at least admFloor.
func a1PingLimit(cfg reactors.Config) (limit time.Duration, arithmetic string) {
	a, _ := reactors.ParseAdmission(cfg.Admission)
	served := time.Duration(a.Burst) * admCost
	rejects := time.Duration(admConns*cfg.Budgets.Input) * admRejectCost
	share := a.Rate * admCost.Seconds()
	round := time.Duration(float64(served+rejects) / (1 - share))
	limit = max(admFloor, admMargin*round)
	return limit, fmt.Sprintf("round ≤ (%d × %v + %d × %d × %v) / (1 − %.2f) = %v; bound max(%v, %d × round) = %v",
		a.Burst, admCost, admConns, cfg.Budgets.Input, admRejectCost, share, round.Round(time.Microsecond), admFloor, admMargin, limit)
}

// a1LagLimit is the longest the case's own client may be held off the CPU
// for its PING latencies to say anything about the server: half the PING
// limit.
func a1LagLimit(pingLimit time.Duration) (limit time.Duration, arithmetic string) {
	limit = pingLimit / 2
	return limit, fmt.Sprintf("half the bound %v = %v", pingLimit, limit)
}

// a1OfferedLimit is the least rate, in frames a second, at which the load
// is the overload the claim is about: 1.5 times the loop's capacity
// (1 / admCost), against the 2× it is meant to offer.
func a1OfferedLimit() (limit float64, arithmetic string) {
	limit = 1.5 / admCost.Seconds()
	return limit, fmt.Sprintf("1.5 × the capacity 1 / %v = %.0f frames/s", admCost, limit)
}

func runA1(c *conformance.C) {
	ref := c.Reference()
	a, err := reactors.ParseAdmission(ref.Config.Admission)
	if err != nil || a.Open() {
		c.Skipf("the reactor runs without an admission limit (admission %q): the claim is about one", ref.Config.Admission)
	}
	bound, why := a1PingLimit(ref.Config)
	c.Evidencef("bound: %s", why)
	ctl := dial(c, "control conn", c.Instance().ControlAddr())
	lag := startLagMeter()
	load := startOverload(c, c.Instance().Addr())
	// The backlog makes the first round saturated: the limit engages and
	// sheds it; the probe measures the steady overload after it.
	warm := time.NewTimer(2 * time.Second)
	select {
	case <-warm.C:
	case <-c.Context().Done():
		return
	}
	results := probeAll(c, []*peer{ctl}, wire.KindPing, 2*bound+time.Second) // longer fails anyway (overBound)
	offered := load.stop()
	clientLag := lag.stop()
	if err := load.Err(); err != nil {
		c.Fatalf("overload: %v", err)
	}
	c.Evidencef("data: %d frames sent over %v (%.0f/s against a capacity of %.0f/s), %d echoed, %d refused; the client's own longest scheduling delay %v",
		offered.sent, offered.over.Round(time.Millisecond), offered.rate(), 1/admCost.Seconds(), offered.echoed, offered.rejected, clientLag.Round(time.Microsecond))
	f := c.Stop()
	f.Stats = finalStats(c, f)
	k := f.Stats.Counters
	c.Evidencef("admission: engaged %d times, %d frames refused; ledger %+v", k.AdmissionEngaged, k.AdmissionRejects, f.Stats.Ledger)
	lagLimit, lagArithmetic := a1LagLimit(bound)
	offeredLimit, offeredArithmetic := a1OfferedLimit()
	switch {
	case clientLag > lagLimit:
		c.Inconclusivef("the case's own client was held off the CPU for %v, over %s: the machine was too busy for PING latencies to say anything about the server", clientLag.Round(time.Millisecond), lagArithmetic)
	case offered.rate() < offeredLimit:
		c.Inconclusivef("the load offered %.0f frames/s, below %s: not the 2× overload (%.0f/s) the claim is about", offered.rate(), offeredArithmetic, 2/admCost.Seconds())
	case k.AdmissionEngaged == 0:
		c.Inconclusivef("the admission limit never engaged: the load did not saturate the loop, so the claim was not exercised")
	}
	judgeProbes(c, []*peer{ctl}, results, bound, "waited behind the data plane at 2× overload")
	if answered := offered.echoed + offered.rejected; answered != offered.sent {
		c.Errorf("%d DATA frames sent, %d echoed and %d refused: %d unanswered", offered.sent, offered.echoed, offered.rejected, offered.sent-answered)
	}
}

// lagMeter measures how late the case's own goroutines get the CPU: a
// goroutine sleeping 1 ms at a time records its longest oversleep. Where
// that is long, the machine, not the server, decided the latencies.
type lagMeter struct {
	stopping atomic.Bool
	done     chan time.Duration
}

func startLagMeter() *lagMeter {
	m := &lagMeter{done: make(chan time.Duration, 1)}
	go func() {
		var worst time.Duration
		for !m.stopping.Load() {
			start := time.Now()
			time.Sleep(time.Millisecond)
			worst = max(worst, time.Since(start)-time.Millisecond)
		}
		m.done <- worst
	}()
	return m
}

// stop ends the meter and returns the longest oversleep.
func (m *lagMeter) stop() time.Duration {
	m.stopping.Store(true)
	return <-m.done
}

// overload is A1's data load: admConns connections, each a writer on the
// open-loop schedule and a reader counting answers.
type overload struct {
	loadState
	wg       sync.WaitGroup
	links    []*faults.TCPLink
	start    time.Time
	sent     atomic.Uint64
	echoed   atomic.Uint64
	rejected atomic.Uint64
}

// overloadTotals are the load's counts when it stopped.
type overloadTotals struct {
	sent, echoed, rejected uint64
	over                   time.Duration
}

// rate is the frames a second the load sent.
func (t overloadTotals) rate() float64 { return float64(t.sent) / max(t.over.Seconds(), 1e-9) }

// startOverload starts the load on addr; stop it with stop.
func startOverload(c *conformance.C, addr string) *overload {
	o := &overload{start: time.Now()}
	for i := range admConns {
		link := dialQuiet(c, fmt.Sprintf("data conn %d", i+1), addr)
		o.links = append(o.links, link)
		o.wg.Add(2)
		go o.write(link, uint64(7000+i))
		go o.read(link, uint64(7000+i))
	}
	c.Cleanup(func() { o.stop() })
	return o
}

// write sends the backlog, then one frame every admPeriod.
func (o *overload) write(link *faults.TCPLink, token uint64) {
	defer o.wg.Done()
	payload := make([]byte, 32)
	var buf []byte
	for seq := range uint64(admBacklog) {
		buf = wire.AppendFrame(buf, wire.KindData, 0, token, seq, 0, payload)
	}
	tick := time.NewTicker(admPeriod)
	defer tick.Stop()
	for seq, n := uint64(admBacklog), uint64(admBacklog); !o.stopping.Load(); seq, n = seq+1, 1 {
		if _, err := link.Conn().Write(buf); err != nil {
			o.fail(fmt.Errorf("data conn %d: write: %w", token, err))
			return
		}
		o.sent.Add(n)
		<-tick.C
		buf = wire.AppendFrame(buf[:0], wire.KindData, 0, token, seq, 0, payload)
	}
}

// read counts the echoes and REJECTs coming back on link.
func (o *overload) read(link *faults.TCPLink, token uint64) {
	defer o.wg.Done()
	dec := wire.NewDecoder(clientMaxFrame)
	buf := make([]byte, 64<<10)
	for {
		n, err := link.Conn().Read(buf)
		if err != nil {
			o.fail(fmt.Errorf("data conn %d: read: %w", token, err))
			return
		}
		dec.Write(buf[:n])
		for {
			h, _, ok, err := dec.Next()
			if err != nil {
				o.fail(fmt.Errorf("data conn %d: %w", token, err))
				return
			}
			if !ok {
				break
			}
			switch h.Kind {
			case wire.KindData:
				o.echoed.Add(1)
			case wire.KindReject:
				o.rejected.Add(1)
			default:
				o.fail(fmt.Errorf("data conn %d: unexpected %v", token, h.Kind))
			}
		}
	}
}

// stop ends the writers, waits for the answers still in flight (up to
// 2 s), resets the connections and returns the totals.
func (o *overload) stop() overloadTotals {
	if o.stopping.Swap(true) {
		return overloadTotals{}
	}
	over := time.Since(o.start)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if o.echoed.Load()+o.rejected.Load() >= o.sent.Load() {
			break // polling a count: the answers have no event of their own
		}
	}
	t := overloadTotals{sent: o.sent.Load(), echoed: o.echoed.Load(), rejected: o.rejected.Load(), over: over}
	for _, l := range o.links {
		l.Reset()
	}
	o.wg.Wait()
	return t
}
