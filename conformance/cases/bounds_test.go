package cases

import (
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"
)

// boundCase is one bound function's answer at the catalogue's constants:
// the limit it must return and the figures its arithmetic must name.
type boundCase struct {
	name       string
	limit      float64
	gotLimit   float64
	arithmetic string
	figures    []string
}

// checkBounds holds every case to its limit, and its arithmetic to naming
// each figure the limit came from, so that the text a verdict prints and
// the number it compares cannot part.
func checkBounds(t *testing.T, cases []boundCase) {
	t.Helper()
	for _, tc := range cases {
		if tc.gotLimit != tc.limit {
			t.Errorf("%s: limit %v, want %v (arithmetic %q)", tc.name, tc.gotLimit, tc.limit, tc.arithmetic)
		}
		for _, f := range tc.figures {
			if !strings.Contains(tc.arithmetic, f) {
				t.Errorf("%s: arithmetic %q does not name %q", tc.name, tc.arithmetic, f)
			}
		}
	}
}

// bound adapts a bound function's two results to a boundCase.
func bound[T ~int64 | ~uint64 | ~float64 | ~int](name string, want T, got T, arithmetic string, figures ...string) boundCase {
	return boundCase{name: name, limit: float64(want), gotLimit: float64(got), arithmetic: arithmetic, figures: figures}
}

func TestM4Bounds(t *testing.T) {
	ref, refText := m4ReferenceLimit(false)
	handoff, handoffText := m4ReferenceLimit(true)
	every, everyText := m4EveryLimit()
	noisy, noisyText := m4NoisyLimit()
	total, totalText := m4TotalLimit()
	checkBounds(t, []boundCase{
		bound("m4ReferenceLimit(no handoff)", 2, ref, refText, "need 1 + 1 = 2"),
		bound("m4ReferenceLimit(handoff)", 3, handoff, handoffText, "need 2", "+ 1 = 3"),
		bound("m4EveryLimit", 75, every, everyText, "75% of 100 connections = 75"),
		bound("m4NoisyLimit", 50, noisy, noisyText, "50% of 100 connections = 50"),
		bound("m4TotalLimit", 150, total, totalText, "1.5 × 100 connections = 150"),
	})
}

// The hot-load limits at lt's default budgets with hotTweak's clock
// check every 4 frames: a turn is 4 frames (the first clock check past
// 1 ms), 4 × 400µs + 200µs = 1.8ms; S1's wait is (8 + 2 + 4) turns.
func TestHotLoadBounds(t *testing.T) {
	s1, s1Text := s1RoundTripLimit(nil, s1Light)
	s2, s2Text := s1RoundTripLimit(nil, 1)
	p99, longest, t1Text := t1LatenessLimits(nil)
	x1, x1Text := x1StopLimit(nil)
	w4, w4Text := w4RoundTripLimit(nil, 4)
	checkBounds(t, []boundCase{
		bound("s1RoundTripLimit(4 light)", 504*time.Millisecond, s1, s1Text,
			"black box", "turn ≤ 4 frames × 400µs + 200µs = 1.8ms", "(consume budget 8 + 2 hot + 4 light) turns = 25.2ms", "max(500ms, 20 × wait) = 504ms"),
		bound("s1RoundTripLimit(1 light)", 500*time.Millisecond, s2, s2Text, "+ 1 light) turns = 19.8ms", "= 500ms"),
		bound("t1LatenessLimits p99", 500*time.Millisecond, p99, t1Text, "p99 ≤ the S1 bound (", "+ 0 light) turns = 18ms"),
		bound("t1LatenessLimits max", time.Second, longest, t1Text, "max ≤ 2 × 500ms = 1s"),
		bound("x1StopLimit", time.Second, x1, x1Text, "2 × the S1 bound (", "+ 1 light", ") = 1s"),
		bound("w4RoundTripLimit", 500*time.Millisecond, w4, w4Text, "(consume budget 8 + 1 blocked + 4 light) turns × 200µs = 2.6ms", "max(500ms, 20 × wait) = 500ms"),
	})
}

func TestA1Bounds(t *testing.T) {
	cfg := reactors.DefaultConfig()
	admissionTweak(reactors.LT, &cfg)
	ping, pingText := a1PingLimit(cfg)
	lag, lagText := a1LagLimit(ping)
	offered, offeredText := a1OfferedLimit()
	checkBounds(t, []boundCase{
		bound("a1PingLimit", 448*time.Millisecond, ping, pingText, "(16 × 400µs + 50 × 64 × 5µs) / (1 − 0.50) = 44.8ms", "max(250ms, 10 × round) = 448ms"),
		bound("a1LagLimit", 224*time.Millisecond, lag, lagText, "half the bound 448ms = 224ms"),
		bound("a1OfferedLimit", 3750, offered, offeredText, "1.5 × the capacity 1 / 400µs = 3750 frames/s"),
	})
}

func TestF4R4Bounds(t *testing.T) {
	growth, growthText := f4GrowthLimit()
	spin, spinText := r4SpinLimit()
	full, fullText := r4FullTableLimit(r4Limit)
	asked, perRun, spinnerText := r4SpinnerLimit()
	checkBounds(t, []boundCase{
		bound("f4GrowthLimit", 64<<20, growth, growthText, "a quarter of the 256 MiB declared = 64 MiB"),
		bound("r4SpinnerLimit (asked)", 375*time.Millisecond, asked, spinnerText, "three quarters of the 500ms window = 375ms"),
		bound("r4SpinnerLimit (per run)", 2500*time.Microsecond, perRun, spinnerText, "less than once per 2.5ms of CPU it ran"),
		bound("r4SpinLimit", 125*time.Millisecond, spin, spinText, "a quarter of the 500ms window = 125ms"),
		bound("r4FullTableLimit", 46, full, fullText, "all but 2 of the limit 48 = 46 descriptors"),
	})
}

func TestW1Bounds(t *testing.T) {
	def := &conformance.Reference{Config: reactors.DefaultConfig()}
	held, heldText := w1HeldLimit(def.Config)
	growth, growthText := w1GrowthLimit(def)
	blackBox, blackBoxText := w1GrowthLimit(nil)
	checkBounds(t, []boundCase{
		bound("w1HeldLimit", 1<<20+64<<10+2*4128, held, heldText, "high watermark 1048576 + byte budget 65536 + 2 × 4128 B frames = 1122368 bytes"),
		bound("w1GrowthLimit(reference)", 4*(1<<20+64<<10)+16<<20, growth, growthText, "4 × (high watermark 1024 KiB + byte budget 64 KiB) + 16 MiB = 20736 KiB"),
		bound("w1GrowthLimit(black box)", 32<<20, blackBox, blackBoxText, "32 MiB"),
	})
}

func TestW2Bounds(t *testing.T) {
	cpu, cpuText := w2CPULimit()
	waits, waitsText := w2WaitsLimit(2, time.Millisecond)
	none, noneText := w2WaitsLimit(0, 10*time.Millisecond)
	checkBounds(t, []boundCase{
		bound("w2CPULimit", 125*time.Millisecond, cpu, cpuText, "a quarter of the 500ms idle window = 125ms"),
		bound("w2WaitsLimit(2 loops)", 4200, waits, waitsText, "(4 × 500ms / 1ms + 100) × 2 loop(s) = 4200 epoll_waits"),
		bound("w2WaitsLimit(0 loops)", 300, none, noneText, "(4 × 500ms / 10ms + 100) × 1 loop(s) = 300"),
	})
}

func TestStopContractBounds(t *testing.T) {
	end, endText := x4EndLimit(conformance.DefaultStopGrace)
	answered, answeredText := x3AnsweredLimit(10_000)
	checkBounds(t, []boundCase{
		bound("x4EndLimit", 6*time.Second, end, endText, "the grace 5s + 1s = 6s"),
		bound("x3AnsweredLimit", 10_000-1023, answered, answeredText, "the 10000 bytes read before SIGTERM − a partial frame (1024 B − 1) = 8977 bytes"),
	})
}

// r4SpinnerText is r4SpinnerLimit's arithmetic.
func r4SpinnerText() string {
	_, _, arithmetic := r4SpinnerLimit()
	return arithmetic
}

// A case's bound states its limits with the arithmetic of the functions
// its verdict compares against, at the default configuration, so that
// the prose changes when they do.
func TestBoundProseCarriesTheArithmetic(t *testing.T) {
	def := &conformance.Reference{Config: reactors.DefaultConfig()}
	adm := reactors.DefaultConfig()
	admissionTweak(reactors.LT, &adm)
	text := func(_ any, arithmetic string) string { return arithmetic }
	want := map[string][]string{
		"F4": {text(f4GrowthLimit())},
		"R4": {text(r4SpinLimit()), text(r4FullTableLimit(r4Limit)), r4SpinnerText()},
		"W1": {text(w1HeldLimit(def.Config)), text(w1GrowthLimit(def)), text(w1GrowthLimit(nil))},
		"W2": {text(w2CPULimit()), text(w2WaitsLimit(1, time.Millisecond))},
		"W4": {text(w4RoundTripLimit(nil, w4Light))},
		"W5": {text(w4RoundTripLimit(nil, w4Light))},
		"S1": {text(s1RoundTripLimit(nil, s1Light))},
		"X4": {text(x4EndLimit(conformance.DefaultStopGrace))},
		"A1": {text(a1PingLimit(adm))},
		"M4": {text(m4ReferenceLimit(false)), text(m4ReferenceLimit(true)), text(m4EveryLimit()), text(m4NoisyLimit()), text(m4TotalLimit())},
	}
	for id, figures := range want {
		cs, ok := Lookup(id)
		if !ok {
			t.Fatalf("no case %s", id)
		}
		for _, f := range figures {
			if !strings.Contains(cs.Claim+" "+cs.Bound, f) {
				t.Errorf("%s's claim and bound do not state %q", id, f)
			}
		}
	}
}
