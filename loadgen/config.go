package loadgen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/wire"
)

// Defaults applied by Config.WithDefaults to zero fields.
const (
	DefaultWindow         = 1024
	DefaultPayload        = 32 // a 64-byte frame
	DefaultDrain          = time.Second
	DefaultInterval       = time.Second
	DefaultConnectTimeout = 2 * time.Second
	// DefaultControlTimeout and DefaultRemovalAfter are the health check's:
	// a PING answered after 10 ms is a false timeout, three in a row on one
	// control connection a false removal. Three is this tool's choice (a
	// common failure threshold of health checkers, e.g. Kubernetes probes'
	// default failureThreshold); the table the check reproduces does not
	// state its own.
	DefaultControlTimeout = 10 * time.Millisecond
	DefaultRemovalAfter   = 3
)

// Limits Validate enforces.
const (
	MaxSources  = 10000 // hot, steady and control connections, each
	MaxInFlight = 65536 // frames in flight per hot source
	MaxWindow   = 65536 // frames outstanding per steady connection
	MaxRate     = 1e8   // frames/s across the steady sources
	// MaxBatchBytes bounds the bytes one write batch may hold (Window or
	// InFlight frames of Payload bytes): it bounds the memory per connection.
	MaxBatchBytes = 64 << 20
	// MaxRemovalAfter bounds RemovalAfter.
	MaxRemovalAfter = 1000000
	// MaxLoops bounds Loops.
	MaxLoops = 256
	// MinUrgentEvery and MaxUrgentEvery bound UrgentEvery (when not 0).
	MinUrgentEvery = 10 * time.Microsecond
	MaxUrgentEvery = time.Hour
	// MaxChurnRate bounds ChurnRate (connections/s).
	MaxChurnRate = 100000
	// MaxChurnBurst bounds ChurnBurst; MaxChurnMax bounds ChurnMax.
	MaxChurnBurst = 10000
	MaxChurnMax   = 65536
	// MaxHotLead bounds HotLead.
	MaxHotLead = 10 * time.Second
)

// DefaultChurnMax is ChurnMax when churn is on and the field is 0.
const DefaultChurnMax = 256

// The engines a loop does its I/O with (Config.Engine).
const (
	// EngineEpoll: level-triggered epoll, one read and one write system
	// call per connection per batch. The default.
	EngineEpoll = "epoll"
	// EngineUring: io_uring, one ring per loop: a multishot recv per
	// connection into the loop's provided buffer ring, and each round's
	// sends, across connections, submitted together with the wait in one
	// io_uring_enter. Wire faults, urgent bytes, churn and a hot lead are
	// epoll's only.
	EngineUring = "uring"
)

// ErrConfig is wrapped by every error of Config.Validate and of decoding a
// Config from JSON.
var ErrConfig = errors.New("loadgen: bad configuration")

// Config describes one run. The zero value of each field with a default
// means that default (see WithDefaults); Validate names the first field it
// finds wrong with its accepted values. A Config round-trips through
// encoding/json (durations as strings such as "10ms", unknown fields
// refused), so it can be handed to a load generator child process as a file.
type Config struct {
	// DataAddr is the target's data address, "host:port".
	DataAddr string
	// ControlAddr is the target's control address; "" means DataAddr (a
	// black-box target serves both on one address).
	ControlAddr string

	// Hot is the number of hot sources: closed loop, one connection each,
	// InFlight frames in flight on it (it sends InFlight frames, then one
	// new frame per answer; answers that arrive in one read are replaced in
	// one write).
	Hot int
	// InFlight is K, the frames in flight per hot source (>= 1 when Hot > 0).
	InFlight int

	// Steady is the number of steady sources: open loop, one connection
	// each, at Rate/Steady frames per second each.
	Steady int
	// Rate is the total frames per second across the steady sources, split
	// evenly. An open loop refuses to run without one.
	Rate float64
	// Arrivals is the steady sources' arrival process: ArrivalsFixed
	// (the default, "" too: one frame every Steady/Rate seconds per
	// source) or ArrivalsPoisson (exponential gaps of that mean, from a
	// generator seeded by ArrivalSeed and the source's index, so a run is
	// reproducible). Each source keeps its own timetable, so latency is
	// corrected for coordinated omission from each frame's intended time
	// either way.
	Arrivals string
	// ArrivalSeed seeds the Poisson arrivals (0 is a seed like another).
	ArrivalSeed uint64
	// arrivalBunch > 1 is a generator fault for the package's tests: the
	// steady sources' frames are intended in groups of arrivalBunch at one
	// instant, the groups arrivalBunch periods apart (Poisson: gaps of that
	// mean), so the rate is kept and the arrivals bunched. The arrivals
	// gate must fail it.
	arrivalBunch int
	// Window bounds the frames outstanding (sent, not yet answered) per
	// steady connection (default 1024). When it is full the source waits;
	// the wait counts in the corrected latency and is attributed to the
	// target.
	Window int

	// Payload is the payload size in bytes of a DATA frame (default 32, a
	// 64-byte frame). Payloads carry wire.FillPattern(token, seq) and are
	// checked on the way back.
	Payload int

	// ControlEvery is the PING period on each control connection; 0 means no
	// control probes.
	ControlEvery time.Duration
	// Control is the number of control connections (default 1 when
	// ControlEvery > 0 or StopAt > 0). Their PINGs are spread evenly over
	// the period.
	Control int
	// ControlTimeout is the health check's timeout (default 10 ms): a PING
	// answered more than this after its intended time is a false timeout
	// (the target was alive, only late). See HealthCheck.
	ControlTimeout time.Duration
	// RemovalAfter is K, the consecutive false timeouts on one control
	// connection after which the health checker removes the node (a false
	// removal) and re-adds it, its count starting again (default 3).
	RemovalAfter int
	// StopAt, when > 0, sends STOP on the first control connection at this
	// time after the start of measurement (the end of Warmup); it must come
	// before the end of Duration.
	StopAt time.Duration

	// ChurnRate, when > 0, opens this many churn connections per second
	// during the sending phase, open loop (see ChurnOutcome): each one
	// connects at its intended instant, sends one DATA frame of Payload
	// bytes, reads its echo and closes. 0, the default, opens none.
	ChurnRate float64
	// ChurnBurst is how many churn connections arrive together at each
	// intended instant (default 1 with ChurnRate): bursts come
	// ChurnRate/ChurnBurst times a second.
	ChurnBurst int
	// ChurnMax caps the churn connections open at once (default 256 with
	// ChurnRate), dealt over the loops; one due while the cap is reached
	// is skipped and counted (ChurnOutcome.Skipped), never opened late.
	ChurnMax int

	// HotLead, when > 0, connects the hot sources and lets them send for
	// HotLead before the steady and control sources connect; the
	// measured schedule (warm-up, then Duration, the steady and control
	// timetables, STOP, urgent ticks, churn, the intervals) starts once
	// every source is connected. Hot frames sent before it are accounted
	// and never measured. 0, the default, connects every source at once.
	// It needs a hot source.
	HotLead time.Duration

	// UrgentEvery, when > 0, sends one TCP urgent byte (send(MSG_OOB)) on
	// a data connection every UrgentEvery, the data connections taking
	// turns, and measures the time to the target's urgent answer (class
	// "urgent"; see UrgentOutcome for the schedule, the skips and the
	// answers). 0, the default, sends none: the data path is then the
	// same, byte for byte, as without the field. It needs a hot or steady
	// source and no wire fault.
	UrgentEvery time.Duration

	// Warmup is sent but not measured; Duration is measured after it; Drain
	// (default 1 s) is how long outstanding frames may still be answered
	// after sending stops. A run lasts at most MaxDuration:
	// ConnectTimeout + Warmup + Duration + Drain, plus HotLead +
	// ConnectTimeout with a hot lead (plus closing, a few milliseconds).
	Duration time.Duration
	Warmup   time.Duration
	Drain    time.Duration
	// Precision, when > 0, is how narrow the headline percentile's
	// interval must be, its width over the percentile (0.05: 5%): at the
	// end of Duration the run goes on sending an Interval at a time while
	// the 95% interval of the data class's HeadlinePercentile (the control
	// class's, without data sources) is wider, until the measured time
	// reaches PrecisionWithin; the precision gate says which ended it
	// (Result.Precision). It needs one loop and no STOP probe. 0, the
	// default: the run ends at Duration.
	Precision float64
	// PrecisionWithin bounds the measured time with Precision (default
	// 4 × Duration).
	PrecisionWithin time.Duration
	// Interval is the length of the intervals of the HDR interval log and of
	// progress reports (default 1 s).
	Interval time.Duration
	// ConnectTimeout bounds the connection of every source before the run
	// starts, and each reconnection (default 2 s).
	ConnectTimeout time.Duration

	// Faults are wire fault specs as faults.ParseWire accepts them ("name"
	// or "name:k=v,..."), applied in order to every write batch of every
	// data (hot and steady) connection. Control connections are never
	// faulted, so control probes and STOP keep measuring the target.
	Faults []string

	// Loops is the number of event loops the generator runs, each on its
	// own locked OS thread with its own epoll set, recorder and ledger
	// (default 1). Connections are dealt to loops by their position in the
	// list hot, steady, control (position p goes to loop p mod Loops), each
	// keeping its name, its schedule and its share of Rate, so the
	// aggregate schedule is the same for any Loops; the results are merged
	// losslessly (see Result.Loops). It must not exceed the connections.
	// The loops run in parallel only with a P each: the process needs
	// GOMAXPROCS >= Loops+1 (Run does not change it; the lab's loadgen
	// role sets it).
	Loops int
	// LoopCPUs, when not empty, pins loop i's thread to CPU
	// LoopCPUs[i mod len(LoopCPUs)] (sched_setaffinity, read back); empty
	// leaves every thread on the mask it inherited. Each must be a CPU the
	// process may use.
	LoopCPUs []int
	// Engine is how every loop does its I/O: EngineEpoll ("" is the same)
	// or EngineUring. The schedule, the coordinated-omission correction,
	// the accounting and the self-check are the same code on both; the
	// self-check says which ran (SelfCheck.Engine). EngineUring needs a
	// kernel with io_uring, provided buffer rings and multishot recv
	// (EngineAvailable), and refuses Faults, UrgentEvery, ChurnRate and
	// HotLead.
	Engine string

	// Progress, when set, is called about once per Interval with the
	// figures so far, from a goroutine of Run's own (never concurrently
	// with itself); a slow callback skips reports, it never slows the load.
	// Run returns after the last call has returned. It is not part of the
	// JSON form.
	Progress func(Progress) `json:"-"`
}

// WithDefaults returns c with every zero field that has a default set to it:
// ControlAddr = DataAddr, Window, Payload, Control (1 when ControlEvery > 0
// or StopAt > 0), ControlTimeout, RemovalAfter, Drain, Interval and
// ConnectTimeout, Loops (1), Engine (EngineEpoll), with ChurnRate
// ChurnBurst (1) and ChurnMax (DefaultChurnMax), and with Precision
// PrecisionWithin (4 × Duration).
func (c Config) WithDefaults() Config {
	if c.Loops == 0 {
		c.Loops = 1
	}
	if c.Engine == "" {
		c.Engine = EngineEpoll
	}
	if c.ControlAddr == "" {
		c.ControlAddr = c.DataAddr
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Payload == 0 {
		c.Payload = DefaultPayload
	}
	if c.Control == 0 && (c.ControlEvery > 0 || c.StopAt > 0) {
		c.Control = 1
	}
	if c.ControlTimeout == 0 {
		c.ControlTimeout = DefaultControlTimeout
	}
	if c.RemovalAfter == 0 {
		c.RemovalAfter = DefaultRemovalAfter
	}
	if c.Drain == 0 {
		c.Drain = DefaultDrain
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.Precision > 0 && c.PrecisionWithin == 0 {
		c.PrecisionWithin = 4 * c.Duration
	}
	if c.ChurnRate > 0 {
		if c.ChurnBurst == 0 {
			c.ChurnBurst = 1
		}
		if c.ChurnMax == 0 {
			c.ChurnMax = DefaultChurnMax
		}
	}
	return c
}

// MaxDuration is the longest a run of c lasts, defaults applied, closing
// aside: ConnectTimeout + Warmup + Duration + Drain, and with a hot lead
// HotLead and a second ConnectTimeout (the steady and control sources
// connect after the lead).
func (c Config) MaxDuration() time.Duration {
	c = c.WithDefaults()
	d := c.ConnectTimeout + c.Warmup + max(c.Duration, c.PrecisionWithin) + c.Drain
	if c.HotLead > 0 {
		d += c.HotLead + c.ConnectTimeout
	}
	return d
}

// Validate checks c after WithDefaults and returns every problem found,
// joined, each wrapping ErrConfig and naming the field (by its reactorlab
// run flag name) and its accepted values; nil means Run will accept c. The
// problems come in the order of the steps below.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var p problems
	c.checkAddrs(&p)
	c.checkSources(&p)
	c.checkRate(&p)
	c.checkBatches(&p)
	c.checkControl(&p)
	c.checkUrgent(&p)
	c.checkChurn(&p)
	c.checkTimes(&p)
	c.checkFaults(&p)
	c.checkEngine(&p)
	return errors.Join(p...)
}

// checkEngine checks the engine's name and, for EngineUring, that nothing
// only the epoll engine does is asked for.
func (c Config) checkEngine(p *problems) {
	switch c.Engine {
	case EngineEpoll:
	case EngineUring:
		for _, x := range []struct {
			field string
			on    bool
		}{{"fault", len(c.Faults) > 0}, {"urgent-every", c.UrgentEvery > 0}, {"churn-rate", c.ChurnRate > 0}, {"hot-lead", c.HotLead > 0}} {
			if x.on {
				p.add("loadgen-engine = %s: %s is the %s engine's only", EngineUring, x.field, EngineEpoll)
			}
		}
	default:
		p.bad("loadgen-engine", fmt.Sprintf("%q", c.Engine), EngineEpoll+" or "+EngineUring)
	}
}

// problems collects what Validate finds, in order.
type problems []error

// bad notes that field has value v, outside what is accepted.
func (p *problems) bad(field string, v any, accepted string) {
	*p = append(*p, fmt.Errorf("%w: %s = %v (accepted: %s)", ErrConfig, field, v, accepted))
}

// add notes a problem that is not one field's value (format is after
// "loadgen: bad configuration: ").
func (p *problems) add(format string, args ...any) {
	*p = append(*p, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...))
}

// checkAddrs checks the data address, and the control address where it
// differs.
func (c Config) checkAddrs(p *problems) {
	checkAddr := func(field, addr string) {
		host, port, err := net.SplitHostPort(addr)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || host == "" {
			p.bad(field, strconv.Quote(addr), "host:port with a port in 1..65535")
		}
	}
	checkAddr("addr", c.DataAddr)
	if c.ControlAddr != c.DataAddr {
		checkAddr("control-addr", c.ControlAddr)
	}
}

// checkSources checks the source counts, that there is one to drive, and
// the hot sources' frames in flight.
func (c Config) checkSources(p *problems) {
	for _, f := range []struct {
		name string
		v    int
	}{{"hot", c.Hot}, {"steady", c.Steady}, {"control", c.Control}} {
		if f.v < 0 || f.v > MaxSources {
			p.bad(f.name, f.v, fmt.Sprintf("0..%d", MaxSources))
		}
	}
	if c.Hot+c.Steady == 0 && c.ControlEvery == 0 && c.ChurnRate == 0 {
		p.add("no source: hot = 0, steady = 0, control-every = 0 and churn-rate = 0 (accepted: at least one hot or steady source, or control probes, or churn-rate > 0)")
	}
	if c.Hot > 0 && (c.InFlight < 1 || c.InFlight > MaxInFlight) {
		p.bad("inflight", c.InFlight, fmt.Sprintf("1..%d frames in flight per hot source (closed loop)", MaxInFlight))
	}
	conns := c.Hot + c.Steady + c.Control
	switch {
	case c.Loops < 1 || c.Loops > MaxLoops:
		p.bad("loops", c.Loops, fmt.Sprintf("1..%d event loops", MaxLoops))
	case c.ChurnRate > 0:
		// Every loop has its share of the churn (checkChurn bounds it).
	case c.Loops > max(conns, 1):
		p.bad("loops", c.Loops, fmt.Sprintf("at most one loop per connection (%d hot + %d steady + %d control)", c.Hot, c.Steady, c.Control))
	}
	for i, cpu := range c.LoopCPUs {
		if cpu < 0 || cpu >= maxCPU {
			p.bad(fmt.Sprintf("loop-cpus[%d]", i), cpu, fmt.Sprintf("a CPU number 0..%d", maxCPU-1))
		}
	}
}

// maxCPU bounds a CPU number (the mask golang.org/x/sys/unix.CPUSet holds).
const maxCPU = 1024

// The arrival processes of Config.Arrivals.
const (
	ArrivalsFixed   = "fixed"
	ArrivalsPoisson = "poisson"
)

// MaxPoissonArrivals bounds Rate × (Warmup + Duration): a Poisson
// timetable is drawn ahead and kept, 8 bytes a frame.
const MaxPoissonArrivals = 16 << 20

// checkRate checks the open loop's rate against its steady sources, and
// its arrival process.
func (c Config) checkRate(p *problems) {
	switch c.Arrivals {
	case "", ArrivalsFixed:
	case ArrivalsPoisson:
		if c.Steady == 0 {
			p.add("arrivals = poisson without steady sources (accepted: steady >= 1; hot sources have no schedule)")
		} else if span := c.Warmup + max(c.Duration, c.PrecisionWithin); c.Rate*span.Seconds() > MaxPoissonArrivals {
			p.add("arrivals = poisson at rate %g over %v: %.0f frames, more than the %d a drawn timetable holds (accepted: rate × (warmup + duration, or precision-within) <= %d)", c.Rate, span, c.Rate*span.Seconds(), MaxPoissonArrivals, MaxPoissonArrivals)
		}
	default:
		p.bad("arrivals", c.Arrivals, ArrivalsFixed+" or "+ArrivalsPoisson)
	}
	switch {
	case math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0 || c.Rate > MaxRate:
		p.bad("rate", c.Rate, fmt.Sprintf("0 < rate <= %g frames/s", MaxRate))
	case c.Steady > 0 && c.Rate == 0:
		p.add("rate = 0: an open loop (steady = %d) refuses to run without a rate (accepted: rate > 0 frames/s across the steady sources)", c.Steady)
	case c.Steady == 0 && c.Rate > 0:
		p.add("rate = %g without steady sources (accepted: steady >= 1 with a rate, or rate = 0)", c.Rate)
	}
}

// checkBatches checks the window, the payload, and the bytes of the largest
// write batch they make (MaxBatchBytes).
func (c Config) checkBatches(p *problems) {
	if c.Window < 1 || c.Window > MaxWindow {
		p.bad("window", c.Window, fmt.Sprintf("1..%d frames", MaxWindow))
	}
	if c.Payload < 1 || c.Payload > wire.DefaultMaxFrame-wire.HeaderSize {
		p.bad("payload", c.Payload, fmt.Sprintf("1..%d bytes, or 0 for the default %d", wire.DefaultMaxFrame-wire.HeaderSize, DefaultPayload))
		return
	}
	frame := wire.HeaderSize + c.Payload
	if c.Steady > 0 && c.Window*frame > MaxBatchBytes {
		p.bad("window", c.Window, fmt.Sprintf("window x frame size (%d bytes) <= %d MiB", frame, MaxBatchBytes>>20))
	}
	if c.Hot > 0 && c.InFlight*frame > MaxBatchBytes {
		p.bad("inflight", c.InFlight, fmt.Sprintf("inflight x frame size (%d bytes) <= %d MiB", frame, MaxBatchBytes>>20))
	}
}

// checkControl checks the control probes' period and health check, and
// that a control connection has something to carry.
func (c Config) checkControl(p *problems) {
	if c.ControlEvery < 0 || (c.ControlEvery > 0 && c.ControlEvery < 10*time.Microsecond) {
		p.bad("control-every", c.ControlEvery, "0 (no control probes) or >= 10µs")
	}
	if c.ControlTimeout < 0 || c.ControlTimeout > time.Hour {
		p.bad("control-timeout", c.ControlTimeout, "(0, 1h], or 0 for the default "+DefaultControlTimeout.String())
	}
	if c.RemovalAfter < 0 || c.RemovalAfter > MaxRemovalAfter {
		p.bad("removal-after", c.RemovalAfter, fmt.Sprintf("1..%d consecutive false timeouts, or 0 for the default %d", MaxRemovalAfter, DefaultRemovalAfter))
	}
	if c.Control > 0 && c.ControlEvery == 0 && c.StopAt == 0 {
		p.bad("control", c.Control, "0 when neither control-every nor stop-at is set (a control connection would carry nothing)")
	}
}

// checkUrgent checks the urgent class's period, and that it has data
// connections to carry it and no wire fault to rewrite them (a fault's
// plan would close, reset or pause a connection with its urgent byte
// outstanding).
func (c Config) checkUrgent(p *problems) {
	if c.UrgentEvery == 0 {
		return
	}
	if c.UrgentEvery < MinUrgentEvery || c.UrgentEvery > MaxUrgentEvery {
		p.bad("urgent-every", c.UrgentEvery, fmt.Sprintf("0 (no urgent bytes) or in [%v, %v]", MinUrgentEvery, MaxUrgentEvery))
	}
	if c.Hot+c.Steady == 0 {
		p.add("urgent-every = %v without data connections (accepted: hot or steady sources to carry the urgent bytes, or urgent-every = 0)", c.UrgentEvery)
	}
	if len(c.Faults) > 0 {
		p.add("urgent-every = %v with wire faults %q (accepted: one or the other: a fault's plan would end or pause a connection with its urgent byte outstanding)", c.UrgentEvery, c.Faults)
	}
}

// checkChurn checks the churn rate, burst and cap, that every loop has a
// share of the cap, and the hot lead.
func (c Config) checkChurn(p *problems) {
	if math.IsNaN(c.ChurnRate) || math.IsInf(c.ChurnRate, 0) || c.ChurnRate < 0 || c.ChurnRate > MaxChurnRate {
		p.bad("churn-rate", c.ChurnRate, fmt.Sprintf("0 (no churn) or in (0, %d] connections/s", MaxChurnRate))
	}
	if c.ChurnRate == 0 {
		if c.ChurnBurst != 0 {
			p.bad("churn-burst", c.ChurnBurst, "0 without churn-rate")
		}
		if c.ChurnMax != 0 {
			p.bad("churn-max", c.ChurnMax, "0 without churn-rate")
		}
	} else {
		if c.ChurnBurst < 1 || c.ChurnBurst > MaxChurnBurst {
			p.bad("churn-burst", c.ChurnBurst, fmt.Sprintf("1..%d connections per burst", MaxChurnBurst))
		}
		switch {
		case c.ChurnMax < 1 || c.ChurnMax > MaxChurnMax:
			p.bad("churn-max", c.ChurnMax, fmt.Sprintf("1..%d churn connections open at once", MaxChurnMax))
		case c.ChurnMax < c.ChurnBurst:
			p.bad("churn-max", c.ChurnMax, fmt.Sprintf(">= churn-burst = %d (a burst must fit)", c.ChurnBurst))
		case c.ChurnMax < c.Loops:
			p.bad("churn-max", c.ChurnMax, fmt.Sprintf(">= loops = %d (each loop gets a share of it)", c.Loops))
		}
		if frame := wire.HeaderSize + c.Payload; c.Payload > 0 && c.ChurnMax*frame > MaxBatchBytes {
			p.bad("churn-max", c.ChurnMax, fmt.Sprintf("churn-max x frame size (%d bytes) <= %d MiB", frame, MaxBatchBytes>>20))
		}
	}
	if c.HotLead < 0 || c.HotLead > MaxHotLead {
		p.bad("hot-lead", c.HotLead, fmt.Sprintf("0 (no lead) or in (0, %v]", MaxHotLead))
	} else if c.HotLead > 0 && c.Hot == 0 {
		p.add("hot-lead = %v without hot sources (accepted: hot >= 1 to lead, or hot-lead = 0)", c.HotLead)
	}
}

// checkTimes checks the run's durations: duration, warm-up, STOP probe
// time, drain, interval and connect timeout.
func (c Config) checkTimes(p *problems) {
	if c.Duration <= 0 || c.Duration > 24*time.Hour {
		p.bad("duration", c.Duration, "(0, 24h]")
	}
	if c.Warmup < 0 || c.Warmup > 24*time.Hour {
		p.bad("warmup", c.Warmup, "[0, 24h]")
	}
	if c.StopAt < 0 || (c.StopAt > 0 && c.StopAt >= c.Duration) {
		p.bad("stop-at", c.StopAt, fmt.Sprintf("0 (no STOP probe) or in (0, duration = %v)", c.Duration))
	}
	if c.Drain < 0 || c.Drain > time.Hour {
		p.bad("drain", c.Drain, "(0, 1h], or 0 for the default 1s")
	}
	if c.Interval < time.Millisecond || c.Interval > time.Hour {
		p.bad("interval", c.Interval, "[1ms, 1h], or 0 for the default 1s")
	}
	if c.ConnectTimeout < 0 || c.ConnectTimeout > time.Minute {
		p.bad("connect-timeout", c.ConnectTimeout, "(0, 1m], or 0 for the default 2s")
	}
	c.checkPrecision(p)
}

// checkPrecision checks the precision target and the time it may take.
func (c Config) checkPrecision(p *problems) {
	switch {
	case c.Precision == 0:
		if c.PrecisionWithin != 0 {
			p.add("precision-within = %v without a precision target (set --precision)", c.PrecisionWithin)
		}
		return
	case !(c.Precision > 0 && c.Precision <= 1):
		p.bad("precision", c.Precision, "(0, 1]: the interval's width over the percentile, 0.05 for 5%; 0 for none")
		return
	}
	if c.PrecisionWithin < c.Duration || c.PrecisionWithin > 24*time.Hour {
		p.bad("precision-within", c.PrecisionWithin, fmt.Sprintf("[duration = %v, 24h], or 0 for 4 × duration", c.Duration))
	}
	if c.Loops > 1 {
		p.add("precision with loops = %d: a precision target needs one loop (the loops would have to agree when to stop)", c.Loops)
	}
	if c.StopAt > 0 {
		p.add("precision with stop-at = %v: a STOP probe stops the target the run would go on measuring", c.StopAt)
	}
	if c.Hot+c.Steady == 0 && c.ControlEvery == 0 {
		p.add("precision without a latency class to judge: it needs hot, steady or control sources")
	}
}

// checkFaults checks that every wire fault spec parses.
func (c Config) checkFaults(p *problems) {
	for _, spec := range c.Faults {
		if _, err := faults.ParseWire(spec); err != nil {
			*p = append(*p, fmt.Errorf("%w: fault: %w", ErrConfig, err))
		}
	}
}

// wireFaults parses c.Faults (already validated).
func (c Config) wireFaults() ([]faults.WireFault, error) {
	var fs []faults.WireFault
	for _, spec := range c.Faults {
		f, err := faults.ParseWire(spec)
		if err != nil {
			return nil, fmt.Errorf("%w: fault: %w", ErrConfig, err)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// configJSON is the JSON form of Config: snake_case names, durations as
// strings in time.Duration syntax.
type configJSON struct {
	DataAddr       string   `json:"data_addr"`
	ControlAddr    string   `json:"control_addr,omitempty"`
	Hot            int      `json:"hot"`
	InFlight       int      `json:"inflight"`
	Steady         int      `json:"steady"`
	Rate           float64  `json:"rate"`
	Arrivals       string   `json:"arrivals,omitempty"`
	ArrivalSeed    uint64   `json:"arrival_seed,omitempty"`
	Precision      float64  `json:"precision,omitempty"`
	PrecisionIn    duration `json:"precision_within,omitempty"`
	Window         int      `json:"window"`
	Payload        int      `json:"payload"`
	ControlEvery   duration `json:"control_every"`
	Control        int      `json:"control"`
	ControlTimeout duration `json:"control_timeout,omitempty"`
	RemovalAfter   int      `json:"removal_after,omitempty"`
	StopAt         duration `json:"stop_at"`
	UrgentEvery    duration `json:"urgent_every,omitempty"`
	ChurnRate      float64  `json:"churn_rate,omitempty"`
	ChurnBurst     int      `json:"churn_burst,omitempty"`
	ChurnMax       int      `json:"churn_max,omitempty"`
	HotLead        duration `json:"hot_lead,omitempty"`
	Duration       duration `json:"duration"`
	Warmup         duration `json:"warmup"`
	Drain          duration `json:"drain"`
	Interval       duration `json:"interval"`
	ConnectTimeout duration `json:"connect_timeout"`
	Faults         []string `json:"faults,omitempty"`
	Loops          int      `json:"loops,omitempty"`
	LoopCPUs       []int    `json:"loop_cpus,omitempty"`
	Engine         string   `json:"engine,omitempty"`
}

// duration is a time.Duration as a JSON string ("10ms").
type duration time.Duration

func (d duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"10ms\", got %s", b)
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration string such as \"10ms\": %w", err)
	}
	*d = duration(v)
	return nil
}

// MarshalJSON encodes c with snake_case field names and durations as
// strings ("1.5s"); Progress is left out.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(configJSON{
		DataAddr: c.DataAddr, ControlAddr: c.ControlAddr, Hot: c.Hot, InFlight: c.InFlight,
		Steady: c.Steady, Rate: c.Rate, Arrivals: c.Arrivals, ArrivalSeed: c.ArrivalSeed, Window: c.Window, Payload: c.Payload,
		Precision: c.Precision, PrecisionIn: duration(c.PrecisionWithin),
		ControlEvery: duration(c.ControlEvery), Control: c.Control, StopAt: duration(c.StopAt),
		ControlTimeout: duration(c.ControlTimeout), RemovalAfter: c.RemovalAfter, UrgentEvery: duration(c.UrgentEvery),
		Duration: duration(c.Duration), Warmup: duration(c.Warmup), Drain: duration(c.Drain),
		Interval: duration(c.Interval), ConnectTimeout: duration(c.ConnectTimeout), Faults: c.Faults,
		Loops: c.Loops, LoopCPUs: c.LoopCPUs, Engine: c.Engine,
		ChurnRate: c.ChurnRate, ChurnBurst: c.ChurnBurst, ChurnMax: c.ChurnMax, HotLead: duration(c.HotLead),
	})
}

// UnmarshalJSON decodes what MarshalJSON encodes. Unknown fields, trailing
// data and durations that are not strings are refused with an error wrapping
// ErrConfig. Progress is left unset; nothing is validated (see Validate).
func (c *Config) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j configJSON
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the configuration object", ErrConfig)
	}
	*c = Config{
		DataAddr: j.DataAddr, ControlAddr: j.ControlAddr, Hot: j.Hot, InFlight: j.InFlight,
		Steady: j.Steady, Rate: j.Rate, Arrivals: j.Arrivals, ArrivalSeed: j.ArrivalSeed, Window: j.Window, Payload: j.Payload,
		Precision: j.Precision, PrecisionWithin: time.Duration(j.PrecisionIn),
		ControlEvery: time.Duration(j.ControlEvery), Control: j.Control, StopAt: time.Duration(j.StopAt),
		ControlTimeout: time.Duration(j.ControlTimeout), RemovalAfter: j.RemovalAfter, UrgentEvery: time.Duration(j.UrgentEvery),
		Duration: time.Duration(j.Duration), Warmup: time.Duration(j.Warmup), Drain: time.Duration(j.Drain),
		Interval: time.Duration(j.Interval), ConnectTimeout: time.Duration(j.ConnectTimeout), Faults: j.Faults,
		Loops: j.Loops, LoopCPUs: j.LoopCPUs, Engine: j.Engine,
		ChurnRate: j.ChurnRate, ChurnBurst: j.ChurnBurst, ChurnMax: j.ChurnMax, HotLead: time.Duration(j.HotLead),
	}
	return nil
}
