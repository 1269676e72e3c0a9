package cases

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// R4's judgement of one window at the full table, on sights shaped like
// those R4's runs record (the first is one, figure for figure): a verdict
// never passes a server on CPU the machine refused it while its listener
// was kept ready, and never names a spin on one signal.
func TestR4Judge(t *testing.T) {
	const ms = time.Millisecond
	thread := func(run, wait time.Duration, blocked int64) []threadSpan {
		return []threadSpan{{threadKey{pid: 1, tid: 1}, threadAccount{run: run, wait: wait, voluntary: blocked, involuntary: 33}}}
	}
	readyIn := func(hits int) r4Ready {
		return r4Ready{looks: r4ReadyLooks, hits: hits, seen: "the listening socket had 24 connections in its accept queue"}
	}
	for _, tc := range []struct {
		name string
		w    r4Sight
		want string // "spin", "inconclusive" or "pass"
	}{
		// libevent without a listener error callback beside a busy core
		// (a whole-tier run here): under the CPU bound only by the CPU
		// it waited for, its listener ready in every look. It passed.
		{"starved-ready-listener", r4Sight{cpu: 121 * ms, wait: 208 * ms, threads: thread(122*ms, 213*ms, 101), ready: readyIn(40)}, "inconclusive"},
		// The same server given the CPU it asked for.
		{"ready-listener-over-the-bound", r4Sight{cpu: 300 * ms, wait: 20 * ms, threads: thread(300*ms, 20*ms, 40), ready: readyIn(40)}, "spin"},
		// A server that sheds what waits: quiet, its listener never kept
		// ready, however long a busy machine made it wait.
		{"shedding-waited", r4Sight{cpu: 10 * ms, wait: 200 * ms, threads: thread(10*ms, 200*ms, 60), ready: readyIn(0)}, "pass"},
		// A level-triggered server that sleeps between waits on a ready
		// listener, quiet on a quiet machine.
		{"sleeper-on-a-quiet-machine", r4Sight{cpu: 5 * ms, wait: 2 * ms, threads: thread(5*ms, 2*ms, 50), ready: readyIn(40)}, "pass"},
		// Starved past three quarters of the window with its listener
		// kept ready: both signals, though its CPU is under the bound.
		{"starved-past-three-quarters", r4Sight{cpu: 60 * ms, wait: 400 * ms, threads: thread(60*ms, 400*ms, 10), ready: readyIn(40)}, "spin"},
		// Starved past three quarters of the window, its one thread
		// blocking often (no spinner by its account), its listener kept
		// ready: the listener and the starvation name the spin.
		{"starved-ready-listener-no-spinner", r4Sight{cpu: 100 * ms, wait: 420 * ms, threads: thread(100*ms, 420*ms, 200), ready: readyIn(40)}, "spin"},
		// CPU over the bound, its threads unread: one signal only.
		{"threads-unread", r4Sight{cpu: 200 * ms, wait: 10 * ms, threadsErr: errors.New("no thread read"), ready: readyIn(0)}, "inconclusive"},
		// CPU over the bound from threads that all block, listener never
		// ready: what the CPU went to is not named.
		{"busy-but-blocking", r4Sight{cpu: 200 * ms, wait: 10 * ms, threads: thread(200*ms, 10*ms, 400), ready: readyIn(0)}, "inconclusive"},
		// Run-queue wait unknown: nothing to add to the CPU under the bound.
		{"wait-unknown", r4Sight{cpu: 121 * ms, wait: -1, ready: readyIn(40)}, "pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, th := range tc.w.threads {
				if r4Spins(th) {
					tc.w.spinner = &tc.w.threads[i]
					break
				}
			}
			spin, notSpin := r4Judge(tc.w)
			got := "pass"
			switch {
			case spin != "" && notSpin != "":
				t.Fatalf("both a spin (%s) and no verdict (%s)", spin, notSpin)
			case spin != "":
				got = "spin"
			case notSpin != "":
				got = "inconclusive"
			}
			if got != tc.want {
				t.Fatalf("%s (spin %q, not a spin %q); want %s", got, spin, notSpin, tc.want)
			}
			if got == "inconclusive" && tc.w.cpu <= r4Window/4 && !strings.HasPrefix(notSpin, "the server was starved of CPU") {
				t.Errorf("a server under the CPU bound left unjudged must be said to be starved: %s", notSpin)
			}
		})
	}
}
