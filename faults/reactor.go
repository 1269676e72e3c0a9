package faults

import (
	"fmt"
	"slices"
	"strings"

	"github.com/reactorlab/reactorlab/reactors"
)

// ReactorFault is a mutant of the reference reactors: a hook that turns a
// correct reactor into a known-buggy one. The conformance suite must fail
// every mutant, on every design it applies to, with the cases it names.
type ReactorFault interface {
	Fault
	// AppliesTo reports whether the suite must catch the fault on design
	// d (where it changes nothing observable, or only by chance, it does
	// not apply; the type's doc says why).
	AppliesTo(d reactors.Design) bool
	// CasesFor lists the cases that must fail on design d (nil when the
	// fault does not apply); Cases is their union over the designs.
	CasesFor(d reactors.Design) []string
	// Switch turns the fault on in f.
	Switch(f *reactors.Faults)
	// Spec is the form reactors.ParseFault and ParseReactor accept.
	Spec() string
}

// reactorBase carries what every reactor fault shares: its name, the
// cases it must fail, and the designs it applies to (nil: all).
type reactorBase struct {
	name    string
	cases   []string
	designs []reactors.Design
}

// Name, Kind, Cases, Spec, AppliesTo and CasesFor implement ReactorFault
// for every fault type that embeds reactorBase.
func (b reactorBase) Name() string    { return b.name }
func (b reactorBase) Kind() Kind      { return Reactor }
func (b reactorBase) Cases() []string { return slices.Clone(b.cases) }
func (b reactorBase) Spec() string    { return b.name }

func (b reactorBase) AppliesTo(d reactors.Design) bool {
	return b.designs == nil || slices.Contains(b.designs, d)
}

func (b reactorBase) CasesFor(d reactors.Design) []string {
	if !b.AppliesTo(d) {
		return nil
	}
	return slices.Clone(b.cases)
}

// The designs with an offload pool (ONESHOT runs callbacks on its own
// worker threads) and those that register sources level-triggered.
var (
	pooled    = []reactors.Design{reactors.LT, reactors.ET, reactors.Prio, reactors.PrioThread}
	levelTrig = []reactors.Design{reactors.LT, reactors.OneShot, reactors.Prio, reactors.PrioThread}
)

// MissedRearm makes ONESHOT skip the rearm every Every-th turn (0 or
// less: 7): the source never reports again and its connection stalls.
type MissedRearm struct{ Every int }

var missedRearm = reactorBase{"missed-rearm", []string{"R2"}, []reactors.Design{reactors.OneShot}}

// Name, Kind, Cases, AppliesTo and CasesFor are missedRearm's.
func (MissedRearm) Name() string                        { return missedRearm.Name() }
func (MissedRearm) Kind() Kind                          { return Reactor }
func (MissedRearm) Cases() []string                     { return missedRearm.Cases() }
func (MissedRearm) AppliesTo(d reactors.Design) bool    { return missedRearm.AppliesTo(d) }
func (MissedRearm) CasesFor(d reactors.Design) []string { return missedRearm.CasesFor(d) }
func (f MissedRearm) Switch(fs *reactors.Faults)        { fs.MissedRearmEvery = f.every() }
func (f MissedRearm) Spec() string                      { return fmt.Sprintf("missed-rearm:every=%d", f.every()) }

func (f MissedRearm) every() int {
	if f.Every <= 0 {
		return 7
	}
	return f.Every
}

// NoDrain makes ET read once per edge and never requeue: work left after
// a budget waits for an edge that never comes.
type NoDrain struct{ reactorBase }

// FdIdentity routes offloaded results by fd number, ignoring generations:
// a result reaches whichever connection now has that fd.
type FdIdentity struct{ reactorBase }

// PermanentEPOLLOUT keeps EPOLLOUT registered with an empty out-queue: a
// level-triggered loop spins while idle (under ET it fires once: harmless).
type PermanentEPOLLOUT struct{ reactorBase }

// NoBudget serves a source until EAGAIN or backpressure, ignoring the
// count, byte and time budgets: one hot source holds the loop for seconds.
// Where control has a thread of its own (prio-thread), a PING is read at
// once, so S2 holds there. Under oneshot any idle worker thread serves
// the light sources, the control connection and its timers between two
// hot turns, whose length varies with where a read first finds the
// socket empty: the mutant escaped S1/S2 in 3 of 6 runs and T1 in 1 of
// 4 under load, so it is not counted there. (A STOP is caught
// mid-turn, since admission closes at once: no-budget delays STOP only by
// chance, so X1 has its own mutant, stop-when-idle.)
type NoBudget struct{ reactorBase }

// UnboundedOutQueue removes the watermarks and the hard cap: a client
// that does not read makes the server buffer everything it sends.
type UnboundedOutQueue struct{ reactorBase }

// LostWakeup drains one ingress budget per eventfd wakeup and sleeps with
// items left: results from the pool are stranded.
type LostWakeup struct{ reactorBase }

// NoFrameLimit allocates whatever a frame header declares.
type NoFrameLimit struct{ reactorBase }

// DropPartial discards an incomplete frame left at the end of a turn.
type DropPartial struct{ reactorBase }

// LimitOffByOne refuses a frame of exactly the maximum size.
type LimitOffByOne struct{ reactorBase }

// DropShortWrite drops the unwritten tail of a short write.
type DropShortWrite struct{ reactorBase }

// AcceptOnceET registers listeners edge-triggered and accepts one
// connection per event: a storm leaves connections in the backlog.
type AcceptOnceET struct{ reactorBase }

// NoEMFILEShed does nothing on EMFILE: the level-triggered listener stays
// readable and the loop spins while the descriptor table is full.
type NoEMFILEShed struct{ reactorBase }

// LeakPending forgets a connection that goes away with work pending,
// leaking its descriptor and slot.
type LeakPending struct{ reactorBase }

// SilentAfterStop drops DATA frames after STOP without REJECT or count.
type SilentAfterStop struct{ reactorBase }

// StopWhenIdle looks for a requested stop only after a round that did no
// work, keeping admission open until then: under steady load STOP is
// never observed. ONESHOT's worker threads share the sources, so each
// has idle rounds under load and sees the stop anyway (measured: the
// mutant escaped X1 in 1 of 10 runs): it is not counted there.
type StopWhenIdle struct{ reactorBase }

// FreeAtEOF closes a connection as soon as a read returns EOF (the peer
// shut down its write side), dropping the echoes still queued for it, as
// the libevent book's echo server frees its bufferevent at EOF; the
// echoes read in the same turn as the EOF are dropped too. Every design
// reads EOF on the same path, so it applies to all.
type FreeAtEOF struct{ reactorBase }

// FlushSpinAtEOF, on a read that returns EOF with echoes still queued,
// writes the out-queue in a loop, retrying at once on EAGAIN (gnet issue
// #341), until it is empty, a write fails or a stop is requested: while
// the half-closed peer does not read, its loop serves no other
// connection. Under oneshot the worker threads share one epoll set, so
// while one spins the others go on serving every other connection (with
// the default two threads the hook's detector saw no freeze in 5 of 5
// runs; with one thread, a freeze in 3 of 3): it does not apply there.
// Under prio-thread the data loop, which every data connection shares,
// freezes (its control loop does not).
type FlushSpinAtEOF struct{ reactorBase }

// Switch turns NoDrain on in f.
func (NoDrain) Switch(f *reactors.Faults) { f.NoDrain = true }

// Switch turns FdIdentity on in f.
func (FdIdentity) Switch(f *reactors.Faults) { f.FdIdentity = true }

// Switch turns PermanentEPOLLOUT on in f.
func (PermanentEPOLLOUT) Switch(f *reactors.Faults) { f.PermanentEPOLLOUT = true }

// Switch turns NoBudget on in f.
func (NoBudget) Switch(f *reactors.Faults) { f.NoBudget = true }

// Switch turns UnboundedOutQueue on in f.
func (UnboundedOutQueue) Switch(f *reactors.Faults) { f.UnboundedOutQueue = true }

// Switch turns LostWakeup on in f.
func (LostWakeup) Switch(f *reactors.Faults) { f.LostWakeup = true }

// Switch turns NoFrameLimit on in f.
func (NoFrameLimit) Switch(f *reactors.Faults) { f.NoFrameLimit = true }

// Switch turns DropPartial on in f.
func (DropPartial) Switch(f *reactors.Faults) { f.DropPartial = true }

// Switch turns LimitOffByOne on in f.
func (LimitOffByOne) Switch(f *reactors.Faults) { f.FrameLimitOffByOne = true }

// Switch turns DropShortWrite on in f.
func (DropShortWrite) Switch(f *reactors.Faults) { f.DropShortWrite = true }

// Switch turns AcceptOnceET on in f.
func (AcceptOnceET) Switch(f *reactors.Faults) { f.AcceptOnceET = true }

// Switch turns NoEMFILEShed on in f.
func (NoEMFILEShed) Switch(f *reactors.Faults) { f.NoEMFILEShed = true }

// Switch turns LeakPending on in f.
func (LeakPending) Switch(f *reactors.Faults) { f.LeakPending = true }

// Switch turns SilentAfterStop on in f.
func (SilentAfterStop) Switch(f *reactors.Faults) { f.SilentAfterStop = true }

// Switch turns StopWhenIdle on in f.
func (StopWhenIdle) Switch(f *reactors.Faults) { f.StopWhenIdle = true }

// Switch turns FreeAtEOF on in f.
func (FreeAtEOF) Switch(f *reactors.Faults) { f.FreeAtEOF = true }

// Switch turns FlushSpinAtEOF on in f.
func (FlushSpinAtEOF) Switch(f *reactors.Faults) { f.FlushSpinAtEOF = true }

// CasesFor leaves out what holds by design (see NoBudget).
func (f NoBudget) CasesFor(d reactors.Design) []string {
	cs := f.reactorBase.CasesFor(d)
	switch d {
	case reactors.PrioThread:
		cs = slices.DeleteFunc(cs, func(c string) bool { return c == "S2" })
	}
	return cs
}

// Reactors returns every reactor fault, in a stable order.
func Reactors() []ReactorFault {
	return []ReactorFault{
		DropPartial{reactorBase{"drop-partial", []string{"F1"}, nil}},
		LimitOffByOne{reactorBase{"limit-off-by-one", []string{"F3"}, nil}},
		NoFrameLimit{reactorBase{"no-frame-limit", []string{"F4"}, nil}},
		NoDrain{reactorBase{"no-drain", []string{"F2", "R1"}, []reactors.Design{reactors.ET}}},
		MissedRearm{},
		AcceptOnceET{reactorBase{"accept-once-et", []string{"R3"}, nil}},
		NoEMFILEShed{reactorBase{"no-emfile-shed", []string{"R4"}, nil}},
		UnboundedOutQueue{reactorBase{"unbounded-outq", []string{"W1"}, nil}},
		PermanentEPOLLOUT{reactorBase{"permanent-epollout", []string{"W2"}, levelTrig}},
		DropShortWrite{reactorBase{"drop-short-write", []string{"W3"}, nil}},
		FdIdentity{reactorBase{"fd-identity", []string{"I1"}, pooled}},
		LeakPending{reactorBase{"leak-pending", []string{"I2"}, nil}},
		NoBudget{reactorBase{"no-budget", []string{"S1", "S2", "T1"}, []reactors.Design{reactors.LT, reactors.ET, reactors.Prio, reactors.PrioThread}}},
		LostWakeup{reactorBase{"lost-wakeup", []string{"S3"}, pooled}},
		SilentAfterStop{reactorBase{"silent-after-stop", []string{"X2"}, nil}},
		StopWhenIdle{reactorBase{"stop-when-idle", []string{"X1"}, []reactors.Design{reactors.LT, reactors.ET, reactors.Prio, reactors.PrioThread}}},
		FreeAtEOF{reactorBase{"free-at-eof", []string{"I3"}, nil}},
		FlushSpinAtEOF{reactorBase{"flush-spin-at-eof", []string{"W4"}, []reactors.Design{reactors.LT, reactors.ET, reactors.Prio, reactors.PrioThread}}},
	}
}

// ParseReactor returns the reactor fault named by spec ("name", or
// "missed-rearm:every=N"); the error lists the accepted names.
func ParseReactor(spec string) (ReactorFault, error) {
	var probe reactors.Faults
	if err := reactors.ParseFault(spec, &probe); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	name, _, _ := strings.Cut(spec, ":")
	for _, f := range Reactors() {
		if f.Name() == name {
			if _, ok := f.(MissedRearm); ok {
				return MissedRearm{Every: probe.MissedRearmEvery}, nil
			}
			return f, nil
		}
	}
	return nil, fmt.Errorf("%w: reactor fault %q has no type in package faults", ErrSpec, name)
}
