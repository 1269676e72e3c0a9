package reactors

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/reactorlab/reactorlab/reactors/cost"
)

// Flags binds every Config field except Faults to a flag of fs, named as
// Validate names them (reactorlab serve's flags), with c's values as
// defaults. Faults have their own repeatable --fault flag (ParseFault).
// The flags whose values have a form of their own refuse a malformed one
// as they are set, with an error that says the form: --callback (as
// cost.Parse reads it), --timer, --wait and --stats (their modes); the
// durations are time.Duration flags. Ranges are Validate's.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Listen, "listen", c.Listen, "data address host:port (port 0 picks one)")
	fs.StringVar(&c.ControlListen, "control-listen", c.ControlListen, "control address host:port for PING/STOP (empty: none; STOP then by signal only)")
	b := &c.Budgets
	fs.IntVar(&b.Ingress, "budget-ingress", b.Ingress, "cross-thread items drained per round (1..1048576)")
	fs.IntVar(&b.Input, "budget-input", b.Input, "frames served per source turn (1..1048576)")
	fs.IntVar(&b.Consume, "budget-consume", b.Consume, "ready sources served per round (1..1048576)")
	fs.IntVar(&b.Bytes, "budget-bytes", b.Bytes, "bytes read per source turn (64..1073741824)")
	fs.DurationVar(&b.Time, "budget-time", b.Time, "time per source turn, 0 disables (>= 0)")
	fs.IntVar(&b.Accept, "budget-accept", b.Accept, "connections accepted per listener turn (1..1048576)")
	fs.IntVar(&b.ClockEvery, "clock-every", b.ClockEvery, "frames or sources between clock reads under a time budget (1..1048576)")
	fs.IntVar(&c.OutHigh, "out-high", c.OutHigh, "out-queue high watermark in bytes: stop reading above it (<= out-cap)")
	fs.IntVar(&c.OutLow, "out-low", c.OutLow, "out-queue low watermark in bytes: resume reading at or below it (< out-high)")
	fs.IntVar(&c.OutCap, "out-cap", c.OutCap, "out-queue hard cap in bytes: close the connection above it (>= max-frame)")
	fs.IntVar(&c.MaxFrame, "max-frame", c.MaxFrame, "largest frame accepted, header included, in bytes (64..1073741824)")
	fs.Var(&modeValue[TimerMode]{&c.Timer, []TimerMode{TimerPeriodic, TimerDeadline}}, "timer", "timer `mode`: periodic or deadline")
	fs.DurationVar(&c.Tick, "tick", c.Tick, "periodic timer tick (10µs..1s)")
	fs.DurationVar(&c.AppTimer, "app-timer", c.AppTimer, "recurring application timer whose lateness is recorded, 0 off (0 or >= 10µs)")
	fs.Var(&checkedString{&c.Callback, checkCost}, "callback", "CPU `cost` per DATA frame: 0, 50us, fixed:50us, uniform:10us-90us, exp:50us, lognormal:50us,0.5")
	fs.IntVar(&c.Workers, "workers", c.Workers, "offload callbacks to this many pool workers, 0 runs them inline (0..1024)")
	fs.IntVar(&c.WorkerQueue, "worker-queue", c.WorkerQueue, "tasks waiting for the pool (1..16777216)")
	fs.IntVar(&c.IngressCap, "ingress-cap", c.IngressCap, "ingress queue capacity per loop (2..16777216)")
	fs.IntVar(&c.Threads, "threads", c.Threads, "oneshot worker threads (1..256)")
	fs.IntVar(&c.Loops, "loops", c.Loops, "data loops of mainsub (its sub-loops), reuseport and shared; 0: one per CPU, at least 2 (0..256)")
	fs.Var(&checkedString{&c.Assign, checkAssign}, "assign", "mainsub: how the acceptor picks a sub-loop (`mode`): round-robin, least-conns, least-loaded")
	fs.Var(&checkedString{&c.Exclusive, checkExclusive}, "exclusive", "shared: register the listener EPOLLEXCLUSIVE in every loop's set (`on` or off)")
	fs.DurationVar(&c.PrioDataBudget, "prio-data-budget", c.PrioDataBudget, "prio: data bucket time per round (>= 1µs)")
	fs.IntVar(&c.MaxConns, "max-conns", c.MaxConns, "connections per reactor (16..16777216)")
	fs.IntVar(&c.MaxEvents, "max-events", c.MaxEvents, "epoll_wait batch size (1..65536)")
	fs.Var(&modeValue[WaitMode]{&c.Wait, []WaitMode{WaitPollFirst, WaitBlock}}, "wait", "how an idle loop waits (`mode`): poll-first or block")
	fs.Var(&modeValue[StatsMode]{&c.Stats, []StatsMode{StatsOn, StatsOff}}, "stats", "latency histograms (`mode`): on, or off (to measure what they cost)")
	fs.Var(&checkedString{&c.ControlSched, checkSched}, "control-sched", "scheduling `class` of the control loop's thread: "+SchedForms)
	fs.Var(cpuListValue{&c.LoopCPUs}, "loop-cpus", "pin loop i's thread to the i-th CPU of this `list` (0-3,8), round-robin; empty: not pinned")
	fs.DurationVar(&c.RTHold, "rt-hold", c.RTHold, "a real-time control loop busy this long without blocking sleeps as long as it was busy (100µs..1s)")
	fs.Var(&checkedString{&c.Admission, checkAdmission}, "admission", "DATA `limit` past saturation: "+AdmissionForms)
	fs.IntVar(&c.AdmissionAfter, "admission-after", c.AdmissionAfter, "saturated rounds in a row that engage the admission limit (1..1000)")
	fs.Var(&modeValue[UrgentMode]{&c.Urgent, []UrgentMode{UrgentOff, UrgentOOB}}, "urgent", "TCP urgent data on data connections (`mode`): off, or oob (EPOLLPRI; each MSG_OOB byte answered with one)")
	r := &c.Ring
	fs.IntVar(&r.Entries, "ring-entries", r.Entries, "uring: submission queue entries (1..32768)")
	fs.IntVar(&r.CQ, "ring-cq", r.CQ, "uring: completion queue entries, 0 for twice ring-entries (ring-entries..65536)")
	fs.IntVar(&r.Buffers, "ring-buffers", r.Buffers, "uring: provided receive buffers (a power of two, 1..32768)")
	fs.IntVar(&r.BufferSize, "ring-buffer-size", r.BufferSize, "uring: bytes per provided receive buffer (512..1048576)")
	fs.DurationVar(&c.StopGrace, "stop-grace", c.StopGrace, "time out-queues may take to drain after STOP_ACK (0..1h]")
}

// Args returns the flags (as Flags and ParseFault read them: --name=value,
// --fault=spec) that turn DefaultConfig into c, in a stable order.
// Parsing them with Flags and ParseFault from DefaultConfig gives back c.
func (c Config) Args() []string {
	def, cur := DefaultConfig(), c
	dfs := flag.NewFlagSet("default", flag.ContinueOnError)
	cfs := flag.NewFlagSet("config", flag.ContinueOnError)
	def.Flags(dfs)
	cur.Flags(cfs)
	var args []string
	cfs.VisitAll(func(f *flag.Flag) {
		if v := f.Value.String(); v != dfs.Lookup(f.Name).Value.String() {
			args = append(args, "--"+f.Name+"="+v)
		}
	})
	for _, spec := range c.Faults.Specs() {
		args = append(args, "--fault="+spec)
	}
	return args
}

// modeValue is a flag.Value for the string-typed modes: Set accepts one of
// accepted, and names them when it refuses a value.
type modeValue[T ~string] struct {
	p        *T
	accepted []T
}

func (m *modeValue[T]) String() string {
	if m.p == nil {
		return ""
	}
	return string(*m.p)
}

func (m *modeValue[T]) Set(s string) error {
	if !slices.Contains(m.accepted, T(s)) {
		names := make([]string, len(m.accepted))
		for i, a := range m.accepted {
			names[i] = string(a)
		}
		return fmt.Errorf("want %s", strings.Join(names, " or "))
	}
	*m.p = T(s)
	return nil
}

// Get returns the mode as a string (flag.Getter).
func (m *modeValue[T]) Get() any { return m.String() }

func checkAssign(s string) error {
	_, err := ParseAssign(s)
	return err
}

func checkExclusive(s string) error {
	if s != "on" && s != "off" {
		return fmt.Errorf("want on or off")
	}
	return nil
}

// checkedString is a flag.Value for a string field with a form of its own
// (--callback, --control-sched): Set keeps the text as given once check
// accepts it, and otherwise returns check's error, which names the
// accepted forms.
type checkedString struct {
	p     *string
	check func(string) error
}

func (v *checkedString) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v *checkedString) Set(s string) error {
	if err := v.check(s); err != nil {
		return err
	}
	*v.p = s
	return nil
}

// Get returns the text as a string (flag.Getter).
func (v *checkedString) Get() any { return v.String() }

// checkCost, checkAdmission and checkSched are checkedString's checks for
// --callback (as cost.Parse reads it), --admission (ParseAdmission) and
// --control-sched (ParseSched).
func checkCost(s string) error {
	_, err := cost.Parse(s)
	return err
}

func checkAdmission(s string) error {
	_, err := ParseAdmission(s)
	return err
}

func checkSched(s string) error {
	_, err := ParseSched(s)
	return err
}

// Specs returns the ParseFault specs that switch on exactly f's faults, in
// the registry's order ([Mutants]).
func (f Faults) Specs() []string {
	var out []string
	for _, m := range Mutants {
		if n := m.Value(f); n > 0 {
			out = append(out, m.Spec(n))
		}
	}
	return out
}
