package loadgen

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind is the type of a knob's value, and so of the Config field it sets.
type Kind int

// The kinds of knobs.
const (
	KindInt      Kind = iota + 1 // an int
	KindUint                     // a uint64
	KindDuration                 // a time.Duration, written with a unit ("10ms")
	KindFloat                    // a float64
	KindFraction                 // a float64 written as "5%" or "0.05"
	KindChoice                   // a string, one of the knob's Choices
)

// Group is where a spec knob sits among a matrix spec's fields: the
// traffic (sources, probes, churn) is read before the reactor's fields,
// the run's own (the generator's loops, the times) after them.
type Group int

// The groups of spec knobs.
const (
	GroupTraffic Group = iota + 1
	GroupRun
)

// SpecRule is how a matrix spec takes a knob: the values it accepts, the
// words it refuses others in, and what leaving the knob out means. A
// spec's knob left out is the Config field's zero value, or, with
// RunDefault, the knob's Default (SpecDefaults).
type SpecRule struct {
	Group Group
	// RunDefault makes a spec that leaves the knob out take the knob's
	// Default, the value reactorlab run's flag has when not given: one
	// table gives both. Without it, a knob left out is the zero value;
	// for hot, inflight and control_every, whose run defaults would add
	// sources a spec did not write (a steady-only spec would gain a hot
	// source and control probes), that difference is deliberate, and
	// the README's spec section says so.
	RunDefault bool
	// Min and Max bound the values accepted, inclusive, in the kind's
	// unit (a count, nanoseconds, the number itself); NaN and ±Inf are
	// never accepted. Choices bound a KindChoice instead.
	Min, Max float64
	// A refused value reads `"VALUE" is not Noun (accepted: Accepted)`,
	// or `"VALUE" (accepted: Accepted)` without a Noun.
	Noun, Accepted string
	// Absent is the text the zero value (the knob left out) compares and
	// prints as, where it means something else than its own text (the
	// default loadgen applies): writing that text is then the same as
	// leaving the knob out. "" prints the zero value as any other.
	Absent string
	// OmitDefault leaves the knob out of a cell's manifest record where it
	// compares equal to the zero value, so that manifests written before
	// the knob existed still compare. Every knob added now sets it.
	OmitDefault bool
}

// Knob is one load knob: a field of Config that reactorlab run sets with
// a flag and, when Spec is not nil, a matrix spec sets with a field.
// Knobs holds every one; a Knob of that table keeps these invariants
// (TestKnobs checks them): Name is unique, of lower-case letters, digits
// and '_'; the value pointer's type and Default's type are the Go type of
// Kind; a KindChoice has Choices, and its Default is among them.
type Knob struct {
	// Name is the knob's spec field name, words joined by '_'; its flag
	// is the same with '-' (FlagName).
	Name string
	Kind Kind
	// Help is the flag's usage text (reactorlab run may add to it what
	// only it knows, such as the machine's defaults).
	Help string
	// Default is the flag's default, in Kind's Go type (int, uint64,
	// time.Duration, float64, string).
	Default any
	// Choices are what a KindChoice accepts.
	Choices []string
	// Validated is the name Config.Validate calls the field by, when it is
	// not FlagName (the load generator's own flag name).
	Validated string
	// Spec is how a matrix spec takes the knob; nil: a flag only.
	Spec *SpecRule

	field func(*Config) any
}

// FlagName is k's flag: Name with '-' for '_'.
func (k Knob) FlagName() string { return strings.ReplaceAll(k.Name, "_", "-") }

// ValidatedName is the name Config.Validate's problems give k's field.
func (k Knob) ValidatedName() string {
	if k.Validated != "" {
		return k.Validated
	}
	return k.FlagName()
}

// Field is the pointer to k's field in c: *int, *uint64, *time.Duration,
// *float64 or *string, as Kind says.
func (k Knob) Field(c *Config) any { return k.field(c) }

// Range bounds of a spec knob.
var (
	inf        = math.Inf(1)
	countRule  = SpecRule{Group: GroupTraffic, Min: 0, Max: inf, Noun: "a count", Accepted: "an integer >= 0"}
	periodRule = SpecRule{Group: GroupTraffic, Min: 0, Max: inf, Noun: "a duration", Accepted: ">= 0 with a unit, e.g. 500us, 2s"}
)

// with returns r with its Group g and OmitDefault set as given.
func (r SpecRule) with(g Group, omit bool) *SpecRule {
	r.Group, r.OmitDefault = g, omit
	return &r
}

// withRunDefault returns r with its Group g and RunDefault set: a spec
// that leaves the knob out takes its Default.
func (r SpecRule) withRunDefault(g Group) *SpecRule {
	r.Group, r.RunDefault = g, true
	return &r
}

// rateRule is a rate of unit (frames/s, connections/s): a number >= 0.
func rateRule(unit string, omit bool) *SpecRule {
	return &SpecRule{Group: GroupTraffic, Min: 0, Max: inf, Noun: "a rate", Accepted: "a number >= 0 of " + unit, OmitDefault: omit}
}

// Knobs are the load knobs, in the order a matrix spec reads those it
// takes within their Group (and reactorlab run's help, which sorts its
// flags, ignores).
var Knobs = []Knob{
	{Name: "hot", Kind: KindInt, Default: 1, Help: "hot sources: closed loop, --inflight frames in flight each",
		Spec: countRule.with(GroupTraffic, false), field: func(c *Config) any { return &c.Hot }},
	{Name: "inflight", Kind: KindInt, Default: 16, Help: "frames in flight per hot source (K)",
		Spec: countRule.with(GroupTraffic, false), field: func(c *Config) any { return &c.InFlight }},
	{Name: "steady", Kind: KindInt, Default: 0, Help: "steady sources: open loop at --rate in all",
		Spec: countRule.with(GroupTraffic, false), field: func(c *Config) any { return &c.Steady }},
	{Name: "rate", Kind: KindFloat, Default: 0.0, Help: "frames per second across the steady sources (required with --steady)",
		Spec: rateRule("frames/s", false), field: func(c *Config) any { return &c.Rate }},
	// arrivals left out of a spec is the fixed timetable.
	{Name: "arrivals", Kind: KindChoice, Default: ArrivalsFixed, Choices: []string{ArrivalsFixed, ArrivalsPoisson},
		Help:  "the steady sources' arrival process: fixed (one frame every steady/rate seconds per source) or poisson (exponential gaps of that mean, reproducible from --arrival-seed)",
		Spec:  &SpecRule{Group: GroupTraffic, Accepted: ArrivalsFixed + " or " + ArrivalsPoisson, Absent: ArrivalsFixed},
		field: func(c *Config) any { return &c.Arrivals }},
	{Name: "arrival_seed", Kind: KindUint, Default: uint64(0), Help: "seed of the poisson arrivals (with the source's index)",
		field: func(c *Config) any { return &c.ArrivalSeed }},
	{Name: "window", Kind: KindInt, Default: DefaultWindow, Help: "frames outstanding per steady source before it waits",
		field: func(c *Config) any { return &c.Window }},
	{Name: "payload", Kind: KindInt, Default: DefaultPayload, Help: "payload bytes per DATA frame (the header adds 32)",
		field: func(c *Config) any { return &c.Payload }},
	{Name: "control_every", Kind: KindDuration, Default: 10 * time.Millisecond, Help: "PING period on each control connection (0: no control probes)",
		Spec: periodRule.with(GroupTraffic, false), field: func(c *Config) any { return &c.ControlEvery }},
	// control left out of a spec is one connection: it compares and
	// prints as its effective value.
	{Name: "control", Kind: KindInt, Default: 0, Help: "control connections (0: 1 when there are probes)",
		Spec: &SpecRule{Group: GroupTraffic, Min: 1, Max: MaxSources, Noun: "a number of control connections",
			Accepted: fmt.Sprintf("1..%d; leave it out for 1", MaxSources), Absent: "1", OmitDefault: true},
		field: func(c *Config) any { return &c.Control }},
	// control_timeout and removal_after are the health check's; left out
	// of a spec they are loadgen's defaults, and compare and print as
	// their effective values.
	{Name: "control_timeout", Kind: KindDuration, Default: DefaultControlTimeout, Help: "health check timeout: a PING answered later is a false timeout",
		Spec: &SpecRule{Group: GroupTraffic, Min: 1, Max: inf, Noun: "a timeout",
			Accepted: fmt.Sprintf("a duration > 0 with a unit, e.g. 10ms; leave it out for the default %v", DefaultControlTimeout),
			Absent:   durationText(DefaultControlTimeout), OmitDefault: true},
		field: func(c *Config) any { return &c.ControlTimeout }},
	{Name: "removal_after", Kind: KindInt, Default: DefaultRemovalAfter, Help: "health check: this many false timeouts in a row on a control connection are a false removal",
		Spec: &SpecRule{Group: GroupTraffic, Min: 1, Max: inf, Noun: "a count of timeouts in a row",
			Accepted: fmt.Sprintf("an integer >= 1; leave it out for the default %d", DefaultRemovalAfter),
			Absent:   strconv.Itoa(DefaultRemovalAfter), OmitDefault: true},
		field: func(c *Config) any { return &c.RemovalAfter }},
	{Name: "stop_at", Kind: KindDuration, Default: time.Duration(0), Help: "send STOP this long after the warm-up and record how long until STOP_ACK (0: none)",
		Spec: periodRule.with(GroupTraffic, false), field: func(c *Config) any { return &c.StopAt }},
	{Name: "urgent_every", Kind: KindDuration, Default: time.Duration(0), Help: "send a TCP urgent byte (MSG_OOB) this often on the data connections in turn and time the target's urgent answer (0: none)",
		Spec: periodRule.with(GroupTraffic, true), field: func(c *Config) any { return &c.UrgentEvery }},
	// churn_burst and churn_max left out (0) are loadgen's defaults with
	// churn; loadgen refuses them without churn_rate.
	{Name: "churn_rate", Kind: KindFloat, Default: 0.0, Help: "open this many churn connections a second while sending, open loop: each connects at its instant, sends one DATA frame, reads the echo and closes (0: none; at most 100000)",
		Spec: rateRule("connections/s", true), field: func(c *Config) any { return &c.ChurnRate }},
	{Name: "churn_burst", Kind: KindInt, Default: 0, Help: "churn connections that arrive together at each instant: bursts come --churn-rate/N times a second (0: 1 with --churn-rate)",
		Spec: countRule.with(GroupTraffic, true), field: func(c *Config) any { return &c.ChurnBurst }},
	{Name: "churn_max", Kind: KindInt, Default: 0, Help: "churn connections open at once; one due beyond it is skipped and counted (0: 256 with --churn-rate)",
		Spec: countRule.with(GroupTraffic, true), field: func(c *Config) any { return &c.ChurnMax }},
	{Name: "hot_lead", Kind: KindDuration, Default: time.Duration(0), Help: "connect the hot sources and let them send this long before the steady and control sources connect; measuring starts once every source is connected (0: all at once; at most 10s)",
		Spec: periodRule.with(GroupTraffic, true), field: func(c *Config) any { return &c.HotLead }},
	// loadgen_loops is Config.Loops, named for the load generator because
	// a spec's loops are the reactor's; left out, the harness deals one
	// loop per CPU of the generator's set.
	{Name: "loadgen_loops", Kind: KindInt, Default: 0, Validated: "loops",
		Help: "event loops of the load generator, each on its own thread, pinned round-robin to the CPUs of its set",
		Spec: &SpecRule{Group: GroupRun, Min: 0, Max: MaxLoops, Noun: "a number of event loops",
			Accepted: fmt.Sprintf("1..%d; 0 or left out: one per CPU of the load generator's set", MaxLoops),
			Absent:   "one per CPU", OmitDefault: true},
		field: func(c *Config) any { return &c.Loops }},
	// loadgen_engine left out of a spec is the epoll engine: it compares
	// and prints as that.
	{Name: "loadgen_engine", Kind: KindChoice, Default: EngineEpoll, Choices: []string{EngineEpoll, EngineUring},
		Help: "how the load generator's loops do their I/O: epoll (a read and a write per connection per batch) or uring (io_uring: a multishot recv per connection into a provided buffer ring, each round's sends submitted with the wait in one io_uring_enter; no wire faults, urgent bytes, churn or hot lead)",
		Spec: &SpecRule{Group: GroupRun, Accepted: EngineEpoll + " or " + EngineUring + "; leave it out for " + EngineEpoll,
			Absent: EngineEpoll, OmitDefault: true},
		field: func(c *Config) any { return &c.Engine }},
	// duration and warmup left out of a spec are run's defaults.
	{Name: "duration", Kind: KindDuration, Default: 10 * time.Second, Help: "measured time, after the warm-up",
		Spec: periodRule.withRunDefault(GroupRun), field: func(c *Config) any { return &c.Duration }},
	{Name: "warmup", Kind: KindDuration, Default: 2 * time.Second, Help: "load sent before measuring",
		Spec: periodRule.withRunDefault(GroupRun), field: func(c *Config) any { return &c.Warmup }},
	{Name: "drain", Kind: KindDuration, Default: DefaultDrain, Help: "time outstanding frames may still be answered after sending stops",
		field: func(c *Config) any { return &c.Drain }},
	{Name: "interval", Kind: KindDuration, Default: DefaultInterval, Help: "interval of the HDR log and of progress reports",
		field: func(c *Config) any { return &c.Interval }},
	{Name: "precision", Kind: KindFraction, Default: 0.0,
		Help:  "`WIDTH` such as 5%: go on measuring past --duration, an --interval at a time, until the 95% interval of the data class's p99 (the control class's without data sources) is at most this wide beside it, or --precision-within has passed; the precision gate says which (one loadgen loop; no --stop-at)",
		field: func(c *Config) any { return &c.Precision }},
	{Name: "precision_within", Kind: KindDuration, Default: time.Duration(0), Help: "the most measured time --precision may take (0: 4 × --duration)",
		field: func(c *Config) any { return &c.PrecisionWithin }},
}

// LookupKnob returns the knob of Knobs named name (spec spelling).
func LookupKnob(name string) (Knob, bool) {
	i := slices.IndexFunc(Knobs, func(k Knob) bool { return k.Name == name })
	if i < 0 {
		return Knob{}, false
	}
	return Knobs[i], true
}

// SpecDefaults returns the load a matrix spec's baseline starts from
// before its fields are read: every knob whose SpecRule sets RunDefault
// at its Default (as AddFlag sets it), every other field zero.
func SpecDefaults() Config {
	var c Config
	fs := flag.NewFlagSet("spec", flag.ContinueOnError)
	for _, k := range Knobs {
		if k.Spec != nil && k.Spec.RunDefault {
			k.AddFlag(fs, &c, k.Help)
		}
	}
	return c
}

// SpecKnobs returns, in table order, the knobs of Knobs a matrix spec
// takes in group g.
func SpecKnobs(g Group) []Knob {
	var out []Knob
	for _, k := range Knobs {
		if k.Spec != nil && k.Spec.Group == g {
			out = append(out, k)
		}
	}
	return out
}

// AddFlag defines k's flag on fs, bound to k's field of c, with usage as
// its help (k.Help, or more) and k.Default as its default, which it sets
// in c. A default of another type than the field's (a table TestKnobs
// refuses) counts as the zero value.
func (k Knob) AddFlag(fs *flag.FlagSet, c *Config, usage string) {
	name := k.FlagName()
	switch p := k.Field(c).(type) {
	case *int:
		def, _ := k.Default.(int)
		fs.IntVar(p, name, def, usage)
	case *uint64:
		def, _ := k.Default.(uint64)
		fs.Uint64Var(p, name, def, usage)
	case *time.Duration:
		def, _ := k.Default.(time.Duration)
		fs.DurationVar(p, name, def, usage)
	case *string:
		def, _ := k.Default.(string)
		fs.StringVar(p, name, def, usage)
	case *float64:
		def, _ := k.Default.(float64)
		if k.Kind != KindFraction {
			fs.Float64Var(p, name, def, usage)
			return
		}
		*p = def
		fs.Func(name, usage, func(s string) error {
			v, err := ParseFraction(s)
			*p = v
			return err
		})
	}
}

// ParseFraction reads a KindFraction: "5%" or "0.05".
func ParseFraction(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("want a width such as 5%% or 0.05, got %q", s)
	}
	if pct {
		v /= 100
	}
	return v, nil
}

// Text is the spec text of k's value in c: a count, a number as %g
// prints it shortest, a duration as time.Duration prints it with "us"
// for µs, a choice as written; the zero value is Spec.Absent where the
// knob has one.
func (k Knob) Text(c *Config) string {
	if k.Spec != nil && k.Spec.Absent != "" && k.isZero(c) {
		return k.Spec.Absent
	}
	switch p := k.Field(c).(type) {
	case *int:
		return strconv.Itoa(*p)
	case *uint64:
		return strconv.FormatUint(*p, 10)
	case *time.Duration:
		return durationText(*p)
	case *float64:
		return strconv.FormatFloat(*p, 'g', -1, 64)
	case *string:
		return *p
	}
	return ""
}

// durationText is d as time.Duration prints it, with "us" for "µs".
func durationText(d time.Duration) string { return strings.ReplaceAll(d.String(), "µ", "u") }

// isZero says k's field in c is its zero value (the knob left out).
func (k Knob) isZero(c *Config) bool {
	var zero Config
	return k.sameValue(c, &zero)
}

// sameValue says k's fields in a and b hold the same value.
func (k Knob) sameValue(a, b *Config) bool {
	switch p := k.Field(a).(type) {
	case *int:
		q, _ := k.Field(b).(*int)
		return q != nil && *p == *q
	case *uint64:
		q, _ := k.Field(b).(*uint64)
		return q != nil && *p == *q
	case *time.Duration:
		q, _ := k.Field(b).(*time.Duration)
		return q != nil && *p == *q
	case *float64:
		q, _ := k.Field(b).(*float64)
		return q != nil && *p == *q
	case *string:
		q, _ := k.Field(b).(*string)
		return q != nil && *p == *q
	}
	return false
}

// Equal says a and b set k alike: the same value, or values that print
// the same (the zero value and the effective value Spec.Absent names).
func (k Knob) Equal(a, b *Config) bool {
	return k.sameValue(a, b) || k.Text(a) == k.Text(b)
}

// IsDefault says a manifest leaves k out for c: Spec.OmitDefault is set
// and c's value is equal to the zero value.
func (k Knob) IsDefault(c *Config) bool {
	var zero Config
	return k.Spec != nil && k.Spec.OmitDefault && k.Equal(c, &zero)
}

// ParseSpec reads a spec's text v for k into c. It refuses, in the
// words of Spec's Noun and Accepted, a value that does not parse as
// Kind or lies outside Spec's range or Choices; c is then unchanged.
func (k Knob) ParseSpec(v string, c *Config) error {
	r := k.Spec
	if r == nil {
		return fmt.Errorf("%q: %s is not a spec field", v, k.Name)
	}
	refuse := func() error {
		if r.Noun == "" {
			return fmt.Errorf("%q (accepted: %s)", v, r.Accepted)
		}
		return fmt.Errorf("%q is not %s (accepted: %s)", v, r.Noun, r.Accepted)
	}
	in := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= r.Min && x <= r.Max }
	switch p := k.Field(c).(type) {
	case *int:
		i, err := strconv.Atoi(v)
		if err != nil || !in(float64(i)) {
			return refuse()
		}
		*p = i
	case *uint64:
		u, err := strconv.ParseUint(v, 10, 64)
		if err != nil || !in(float64(u)) {
			return refuse()
		}
		*p = u
	case *time.Duration:
		d, err := time.ParseDuration(v)
		if err != nil || !in(float64(d)) {
			return refuse()
		}
		*p = d
	case *float64:
		f, err := strconv.ParseFloat(v, 64)
		if k.Kind == KindFraction {
			f, err = ParseFraction(v)
		}
		if err != nil || !in(f) {
			return refuse()
		}
		*p = f
	case *string:
		if !slices.Contains(k.Choices, v) {
			return refuse()
		}
		*p = v
	default:
		return refuse()
	}
	return nil
}
