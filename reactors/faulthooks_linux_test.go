//go:build linux

package reactors_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
)

// The fault-hook test: every mutant of the registry (reactors.Mutants) has
// at least one detector here, a small check that passes the correct
// reactor and catches the mutant, so each hook is proven live. This file
// holds the rows and the driver; the detectors are in the files beside it,
// by family (faulthooks_read: framing, readiness and budgets;
// faulthooks_write: the write path and EOF; faulthooks_stop: identity and
// stop).

// faultHook is one detector of a mutant, and the designs it runs on.
type faultHook struct {
	// variant names the detector when a mutant has several on one design
	// ("queued"); empty otherwise.
	variant string
	// designs are the designs it runs on, each one the mutant applies to
	// (nil: all of those).
	designs []reactors.DesignName
	// param is the mutant's parameter (0: its default).
	param int
	// setup tweaks the configuration, for the correct reactor and the
	// mutant alike.
	setup func(*reactors.Config)
	// detect returns nil when the reactor kept the hook's claim, an error
	// saying how it broke it, or one wrapping errNotShown when it could
	// not make the condition the claim needs (a verdict neither way).
	detect func(*reactors.Reactor) error
	// unstarted: detect gets the reactor before Start, and starts it.
	unstarted bool
	// isolated replaces detect: it runs in a child process
	// (TestFaultHookChild), where it may lower the descriptor limit, and
	// builds and stops its own reactor there.
	isolated func(t testing.TB, design reactors.DesignName, cfg reactors.Config) error
}

// errNotShown marks a detector's error that is no verdict: the condition
// its mutant acts on never arose (a burst that did not overflow the
// completion queue), so neither a correct reactor nor the mutant was put
// to the test. The row says so and skips.
var errNotShown = errors.New("the condition the claim needs never arose")

// The designs a detector runs on where not all the mutant applies to.
// The hooks of drop-partial, limit-off-by-one and free-at-eof sit in code
// every design shares; each is proven on the designs whose paths around
// it differ (ET's ready queue, ONESHOT's workers and rearm, prio's control
// bucket, prio-thread's second loop), on all of them where that is cheap.
var (
	lt = []reactors.DesignName{reactors.LT}
	// ET and prio accept exactly as LT does (one loop, a level-triggered
	// listener); ONESHOT rearms its listener, prio-thread has two loops.
	acceptPaths = []reactors.DesignName{reactors.LT, reactors.OneShot, reactors.PrioThread}
	// One loop without and with a ready queue, and worker threads.
	writePaths   = []reactors.DesignName{reactors.LT, reactors.ET, reactors.OneShot}
	ltAndOneShot = []reactors.DesignName{reactors.LT, reactors.OneShot}
	// One loop, and a control loop beside the data loop.
	ltAndPrioThread = []reactors.DesignName{reactors.LT, reactors.PrioThread}
	// Every design but ONESHOT, whose stop is seen on another path.
	oneLoopStops = []reactors.DesignName{reactors.LT, reactors.ET, reactors.Prio, reactors.PrioThread}
	// The one-loop proactor.
	uringOnly = []reactors.DesignName{reactors.Uring}
)

// faultHooks holds the detectors of every registry entry, by mutant name
// (TestFaultHooksCoverRegistry holds it to the registry).
var faultHooks = map[string][]faultHook{
	"missed-rearm":       {{param: 3, detect: detectStall}},
	"no-drain":           {{detect: detectBurstStall}},
	"fd-identity":        {{designs: lt, setup: slowOffload(100 * time.Millisecond), detect: detectStaleResult}},
	"permanent-epollout": {{designs: lt, setup: deadlineTimers, detect: detectIdleBusyLoop}},
	"no-budget":          {{designs: lt, detect: detectUnbudgetedTurn}},
	"unbounded-outq":     {{designs: lt, detect: detectSlowConsumer}},
	"lost-wakeup":        {{designs: lt, setup: offloadTinyIngress, detect: detectBurstStall}},
	"no-frame-limit":     {{designs: lt, detect: detectOverSize}},
	"drop-partial":       {{detect: detectSplitFrames}},
	"limit-off-by-one":   {{setup: frameLimit100k, detect: detectFrameLimitEdge}},
	"drop-short-write":   {{designs: writePaths, setup: bigOutQueue, detect: detectShortWrites}},
	"accept-once-et":     {{designs: acceptPaths, detect: detectAcceptStorm, unstarted: true}},
	"no-emfile-shed":     {{designs: ltAndOneShot, setup: deadlineTimers, isolated: detectEMFILEBusyLoop}},
	"leak-pending": {
		{designs: lt, setup: smallOutQueueSlowOffload, detect: detectLeakPending},
		{designs: []reactors.DesignName{reactors.OneShot}, setup: smallOutQueue, detect: detectLeakPending},
	},
	"silent-after-stop": {
		{designs: oneLoopStops, detect: detectSilentAfterStop},
		{designs: []reactors.DesignName{reactors.OneShot}, setup: stopDuringCallback, detect: detectSilentAfterStopBusy},
	},
	"stop-when-idle": {{designs: ltAndPrioThread, setup: costlyFrames, detect: detectStopUnderLoad}},
	// EOF is read on the path every design shares, but each reaches it
	// from its own turn scheduling: prove both ways of losing echoes on
	// all of them.
	"free-at-eof": {
		{variant: "queued", setup: bigOutQueue, detect: detectEOFWithQueuedEchoes},
		{variant: "same-turn", detect: detectEOFInEchoingTurn, unstarted: true},
	},
	// Every design it applies to: not oneshot, whose other worker thread
	// serves everyone else while one spins (its registry entry's Scope).
	"flush-spin-at-eof":      {{detect: detectFlushSpinAtEOF}},
	"block-on-full-write":    {{detect: detectBlockOnFullWrite}},
	"admission-ignored":      {{designs: []reactors.DesignName{reactors.LT, reactors.ET}, setup: admissionLimit, detect: detectIgnoredAdmission}},
	"handoff-drop-when-full": {{setup: tinySubLoopIngress, detect: detectLostHandoff}},
	"serve-on-two-loops":     {{setup: twoLoops, detect: detectTwoLoopsOnOneSocket}},
	// mainsub deals the old and the new connection to different sub-loops
	// every time; reuseport's flow hash does half the time (conformance M3
	// retries until it does).
	"fd-identity-across-loops": {{designs: []reactors.DesignName{reactors.MainSub}, setup: twoLoopsSlowOffload, detect: detectStaleResult}},
	"no-accept-coordination":   {{setup: fourIdleLoops, detect: detectHerd}},
	"stop-wakes-one-loop": {
		{designs: []reactors.DesignName{reactors.MainSub, reactors.ReusePort, reactors.SharedListener}, setup: fourIdleLoops, detect: detectStopNotSeen},
		{designs: []reactors.DesignName{reactors.PrioThread}, setup: deadlineTimers, detect: detectStopNotSeen},
	},
	// The completion path's hooks are one implementation for every ring
	// (ring_linux.go), on one loop or several: proven on uring; the
	// mutation table holds the multi-loop proactors to each mutant's case.
	"uring-enobufs-eof":      {{designs: uringOnly, setup: fourBuffers, detect: detectBufferRingExhausted}},
	"uring-overflow-ignored": {{designs: uringOnly, setup: sixteenEntryCQ, detect: detectOverflowLost}},
	"uring-close-no-cancel":  {{designs: uringOnly, detect: detectReusedDescriptor}},
}

// faultHookCase is one row of TestFaultHooksChangeBehaviour: a detector
// run on one design against the correct reactor and against the mutant.
type faultHookCase struct {
	name   string // mutant[/variant]/design
	design reactors.DesignName
	mutant reactors.Mutant
	faultHook
}

// config is the row's configuration for the correct reactor or the mutant
// (switched on by its spec, as the CLI does).
func (tc faultHookCase) config(t testing.TB, mutant bool) reactors.Config {
	cfg := reactors.DefaultConfig()
	if tc.setup != nil {
		tc.setup(&cfg)
	}
	if mutant {
		if err := reactors.ParseFault(tc.mutant.Spec(tc.param), &cfg.Faults); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// faultHookCases expands faultHooks into rows, in the registry's order:
// one per detector and design.
func faultHookCases() []faultHookCase {
	var cases []faultHookCase
	for _, m := range reactors.Mutants {
		for _, h := range faultHooks[m.Name] {
			for _, d := range hookDesigns(m, h) {
				name := m.Name + "/" + string(d)
				if h.variant != "" {
					name = m.Name + "/" + h.variant + "/" + string(d)
				}
				cases = append(cases, faultHookCase{name: name, design: d, mutant: m, faultHook: h})
			}
		}
	}
	return cases
}

// hookDesigns are the designs h runs on: its own, or every design m
// applies to.
func hookDesigns(m reactors.Mutant, h faultHook) []reactors.DesignName {
	if h.designs != nil {
		return h.designs
	}
	return slices.DeleteFunc(designs.Names(), func(d reactors.DesignName) bool { return !m.AppliesTo(d) })
}

// Every registry entry has a detector, every detector belongs to an entry
// and runs only on designs its mutant applies to, and the rows' names are
// distinct: a new mutant cannot skip the fault-hook test.
func TestFaultHooksCoverRegistry(t *testing.T) {
	for _, m := range reactors.Mutants {
		if len(faultHooks[m.Name]) == 0 {
			t.Errorf("mutant %s has no fault-hook detector (faultHooks)", m.Name)
		}
	}
	for name, hooks := range faultHooks {
		m, ok := reactors.LookupMutant(name)
		if !ok {
			t.Errorf("faultHooks[%q]: no such mutant in the registry", name)
			continue
		}
		for _, h := range hooks {
			for _, d := range hookDesigns(m, h) {
				if !m.AppliesTo(d) {
					t.Errorf("faultHooks[%q] runs on %s, which the mutant does not apply to", name, d)
				}
			}
			if (h.detect == nil) == (h.isolated == nil) {
				t.Errorf("faultHooks[%q]: want exactly one of detect and isolated", name)
			}
		}
	}
	seen := map[string]bool{}
	for _, tc := range faultHookCases() {
		if seen[tc.name] {
			t.Errorf("two fault-hook rows are named %s", tc.name)
		}
		seen[tc.name] = true
	}
}

// Each reactor fault hook must turn a correct reactor into one that a
// simple detector catches, and the same detector must pass the correct
// reactor. (The conformance suite has the full cases; this proves the
// hooks are live.) It runs in the full tier only: -short skips it. The
// full tier runs each hook on the first design it applies to; with
// REACTORLAB_FAULTHOOKS_EVERY_DESIGN=1, on every one (67 s against 40 s:
// the mutation table, conformance/mutation, catches each mutant on its
// designs through the cases). A row whose detector could not make its
// condition (errNotShown) skips, saying so, and the hook is tried on its
// next design.
func TestFaultHooksChangeBehaviour(t *testing.T) {
	if testing.Short() {
		// Each detector waits for a stall or a second of traffic (one row
		// per mutant, on its first design, took 35 s).
		t.Skip("-short: the detectors run in the full tier (TestFaultHooksCoverRegistry checks every mutant has one)")
	}
	everyDesign := os.Getenv("REACTORLAB_FAULTHOOKS_EVERY_DESIGN") == "1"
	judged := map[string]bool{} // mutant[/variant] judged on a design
	for _, tc := range faultHookCases() {
		hook := strings.TrimSuffix(tc.name, "/"+string(tc.design))
		if !everyDesign && judged[hook] {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			judged[hook] = true
			for _, mutant := range []bool{false, true} {
				err := tc.run(t, mutant)
				switch {
				case errors.Is(err, errNotShown):
					judged[hook] = false
					t.Skipf("inconclusive on the %s: %v", map[bool]string{false: "correct " + string(tc.design), true: "mutant"}[mutant], err)
				case !mutant && err != nil:
					t.Fatalf("correct %s flagged: %v", tc.design, err)
				case mutant && err == nil:
					t.Fatalf("mutant %s (%s) not detected", tc.design, tc.mutant.Spec(tc.param))
				case mutant:
					t.Logf("mutant detected: %v", err)
				}
			}
		})
	}
}

// run runs the row's detector against the correct reactor or the mutant
// and returns what it found.
func (tc faultHookCase) run(t *testing.T, mutant bool) error {
	switch {
	case tc.isolated != nil:
		return runIsolatedFaultHook(t, tc.name, mutant)
	case tc.unstarted:
		return tc.detect(newUnstarted(t, tc.design, tc.config(t, mutant)))
	default:
		return tc.detect(reactortest.Start(t, tc.design, tc.config(t, mutant)))
	}
}

// newUnstarted builds a reactor without starting it, and makes sure it is
// stopped (or closed, if it never started) when the test ends.
func newUnstarted(t testing.TB, design reactors.DesignName, cfg reactors.Config) *reactors.Reactor {
	t.Helper()
	r, err := designs.New(design, cfg)
	if err != nil {
		t.Fatalf("new %s: %v", design, err)
	}
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

const faultHookChildEnv = "REACTORLAB_FAULTHOOK_CHILD"

// faultHookVerdict starts the line on which TestFaultHookChild reports.
const faultHookVerdict = "fault hook verdict: "

// runIsolatedFaultHook runs row name's isolated detector in a child process
// (like TestEMFILE) and returns the error it reported.
func runIsolatedFaultHook(t *testing.T, name string, mutant bool) error {
	t.Helper()
	mode := "correct"
	if mutant {
		mode = "mutant"
	}
	out := runChild(t, "^TestFaultHookChild$", faultHookChildEnv+"="+name+","+mode, 30*time.Second)
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, faultHookVerdict); ok {
			if v == "ok" {
				return nil
			}
			return errors.New(v)
		}
	}
	t.Fatalf("child (%s) gave no verdict:\n%s", mode, out)
	return nil
}

// TestFaultHookChild runs one isolated row of TestFaultHooksChangeBehaviour
// in the child process that runIsolatedFaultHook starts, and prints the
// detector's verdict.
func TestFaultHookChild(t *testing.T) {
	spec := os.Getenv(faultHookChildEnv)
	if spec == "" {
		t.Skip("runs only as TestFaultHooksChangeBehaviour's child process")
	}
	name, mode, _ := strings.Cut(spec, ",")
	for _, tc := range faultHookCases() {
		if tc.name == name && tc.isolated != nil {
			if err := tc.isolated(t, tc.design, tc.config(t, mode == "mutant")); err != nil {
				fmt.Printf("%s%v\n", faultHookVerdict, err)
			} else {
				fmt.Printf("%sok\n", faultHookVerdict)
			}
			return
		}
	}
	t.Fatalf("no isolated row %q", name)
}

// The configurations the detectors need, for the correct reactor and the
// mutant alike.

func deadlineTimers(c *reactors.Config) { c.Timer = reactors.TimerDeadline }

// offloadTinyIngress makes worker results queue up beyond one ingress
// budget, with no periodic tick to paper over a lost wakeup.
func offloadTinyIngress(c *reactors.Config) {
	c.Timer = reactors.TimerDeadline
	c.Workers = 2
	c.Budgets.Ingress = 4
}

// frameLimit100k sets a frame limit that is neither a power of two nor a
// buffer size.
func frameLimit100k(c *reactors.Config) { c.MaxFrame = 100_000 }

// bigOutQueue lets the out-queue hold more than the kernel's socket buffers
// (some 4 MiB on loopback here) without backpressure.
func bigOutQueue(c *reactors.Config) { c.OutHigh, c.OutLow, c.OutCap = 64<<20, 1<<20, 128<<20 }

// smallOutQueue makes a client that does not read fill the out-queue past
// the high watermark quickly.
func smallOutQueue(c *reactors.Config) { c.OutHigh, c.OutLow = 64<<10, 16<<10 }

// slowOffload gives the reactor one pool worker with callbacks of d, so a
// callback is still in flight when its connection dies.
func slowOffload(d time.Duration) func(*reactors.Config) {
	return func(c *reactors.Config) { c.Workers, c.Callback = 1, d.String() }
}

// smallOutQueueSlowOffload is smallOutQueue with slowOffload of 500 ms.
func smallOutQueueSlowOffload(c *reactors.Config) {
	smallOutQueue(c)
	slowOffload(500 * time.Millisecond)(c)
}

// costlyFrames makes every DATA frame cost 100 µs of the loop's CPU, so
// that a client writing without pause keeps work waiting every round.
func costlyFrames(c *reactors.Config) { c.Callback = "fixed:100µs" }

// stopDuringCallback (ONESHOT): 500 ms callbacks run inline on the
// workers, and each epoll_wait returns one event, so a STOP is taken by one
// worker while the other is inside a callback.
func stopDuringCallback(c *reactors.Config) { c.Callback, c.MaxEvents = "500ms", 1 }
