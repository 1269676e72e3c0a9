//go:build linux

package ingress

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStressNoLostWakeup is the stress test: four producers race the
// owner's sleep, and every one of 10^6 items (10^5 with -short) must arrive,
// per producer in order, with no wait ever timing out while items are owed.
// Producers pause now and then so the owner empties the queue and really
// sleeps; the test insists that it did, hundreds of times, or it would not be
// testing the sleep path at all.
func TestStressNoLostWakeup(t *testing.T) {
	const producers = 4
	per := 250_000
	// Observed on a loaded 2-core machine: 800 to 50,000 blocking waits per
	// 10^6 items, depending on how the kernel schedules the owner.
	minBlocking := 300
	if testing.Short() {
		per = 25_000
		minBlocking = 30
	}
	for _, mode := range []struct {
		name string
		edge bool
	}{{"level", false}, {"edge", true}} {
		t.Run(mode.name, func(t *testing.T) {
			// A small ring, so producers also meet "full" and retry.
			q := newQueue[item](t, stressCapacity)
			// pushed is counted per producer, each on its own cache line, so
			// that the evidence counter does not serialise the producers.
			var pushed [producers]paddedCount
			var fullRetries atomic.Int64
			var stop atomic.Bool
			var wg sync.WaitGroup
			for p := range producers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(p)))
					for s := range per {
						for !q.Push(item{uint32(p), uint32(s)}) {
							if stop.Load() {
								return
							}
							fullRetries.Add(1)
							runtime.Gosched()
						}
						pushed[p].n.Add(1)
						pause(rng)
					}
				})
			}

			next := make([]uint32, producers)
			res := make(chan ownerResult, 1)
			go func() {
				st, err := runOwner(ownerConfig{
					q: q, edge: mode.edge, proto: protoCorrect, budget: 64,
					total: producers * per, sleep: 5 * time.Second,
					pushed: func() int { return sumCounts(pushed[:]) },
					check: func(v item) error {
						if v.producer >= producers {
							return fmt.Errorf("item from unknown producer %d", v.producer)
						}
						if want := next[v.producer]; v.seq != want {
							return fmt.Errorf("producer %d: got seq %d, want %d (lost, duplicated or reordered)", v.producer, v.seq, want)
						}
						next[v.producer]++
						return nil
					},
				})
				res <- ownerResult{st, err}
			}()
			r := <-res
			stop.Store(true)
			wg.Wait()
			st := r.st
			t.Logf("%s: %d items in %v; owner waits %d: blocking %d (kernel-counted sleeps %d), zero-timeout %d, wakeups %d; max depth %d; full retries %d",
				mode.name, st.delivered, st.wallDuration.Round(time.Millisecond), st.waits, st.blocking, st.ctxSwitches,
				st.zeroWaits, st.wakeups, st.maxDepth, fullRetries.Load())
			if r.err != nil {
				t.Fatalf("owner loop: %v (pushed %d, delivered %d, queue Len %d)", r.err, sumCounts(pushed[:]), st.delivered, q.Len())
			}
			if st.delivered != producers*per {
				t.Fatalf("delivered %d, want %d", st.delivered, producers*per)
			}
			if n, pending := q.Drain(64, func(item) {}); n != 0 || pending || q.Len() != 0 {
				t.Fatalf("after the run: Drain = %d, %v, Len %d; want an empty queue", n, pending, q.Len())
			}
			if err := q.Err(); err != nil {
				t.Fatalf("queue Err: %v", err)
			}
			if st.blocking < minBlocking {
				t.Errorf("owner blocked in epoll_wait only %d times, want >= %d: the sleep path was not exercised", st.blocking, minBlocking)
			}
		})
	}
}

// stressCapacity is small enough that producers regularly find the queue full
// and retry, large enough that a descheduled owner does not turn the run into
// a spin on full.
const stressCapacity = 4096

type paddedCount struct {
	n atomic.Int64
	_ [56]byte
}

func sumCounts(c []paddedCount) int {
	var sum int64
	for i := range c {
		sum += c[i].n.Load()
	}
	return int(sum)
}

type ownerResult struct {
	st  ownerStats
	err error
}

// pause makes a producer stop now and then: mostly not at all, sometimes a
// yield, and about twice per 1024 items a spin of up to ~0.1-0.3 ms, long
// enough for the owner to drain the backlog and fall asleep while that
// producer holds its P. The spins, not the yields, are what make the owner
// sleep thousands of times per 10^6 items.
func pause(rng *rand.Rand) {
	switch r := rng.IntN(1024); {
	case r < 8:
		runtime.Gosched()
	case r < 10:
		spin(rng.IntN(400_000))
	}
}

var spinSink atomic.Uint64

func spin(n int) {
	x := uint64(n)
	for i := range n {
		x = x*6364136223846793005 + uint64(i)
	}
	spinSink.Add(x)
}

// TestOwnerLoopDetectsLostWakeup is the negative control: the same owner loop
// and detector as the stress test, run with the wrong protocols on scenarios
// that make each bug deterministic, must report the stranded items; run with
// the correct protocol on the same scenarios it must deliver everything. This
// proves the stress test can fail.
func TestOwnerLoopDetectsLostWakeup(t *testing.T) {
	cases := []struct {
		name  string
		proto protocol
		burst int // items pushed before the owner's first wait
		// pushAfterFirstDrain: push one more item right after the first Drain,
		// i.e. inside the window between "looked at the queue" and "cleared the
		// flag" that ack-after-drain leaves open.
		pushAfterFirstDrain bool
		wantLost            bool
		wantStranded        int
	}{
		{name: "burst beyond budget/ignore pending", proto: protoIgnorePending, burst: 200, wantLost: true, wantStranded: 200 - 64},
		{name: "burst beyond budget/correct", proto: protoCorrect, burst: 200},
		{name: "push after drain/ack after drain", proto: protoAckAfterDrain, burst: 1, pushAfterFirstDrain: true, wantLost: true, wantStranded: 1},
		{name: "push after drain/correct", proto: protoCorrect, burst: 1, pushAfterFirstDrain: true},
	}
	for _, c := range cases {
		for _, edge := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/edge=%v", c.name, edge), func(t *testing.T) {
				q := newQueue[item](t, 256)
				pushed := 0
				push := func() {
					if !q.Push(item{0, uint32(pushed)}) {
						t.Errorf("push %d refused", pushed)
					}
					pushed++
				}
				for range c.burst {
					push()
				}
				total := c.burst
				var afterDrain func()
				if c.pushAfterFirstDrain {
					total++
					afterDrain = func() {
						if pushed == c.burst {
							push()
						}
					}
				}
				next := uint32(0)
				res := make(chan ownerResult, 1)
				go func() {
					st, err := runOwner(ownerConfig{
						q: q, edge: edge, proto: c.proto, budget: 64, total: total,
						sleep:      200 * time.Millisecond,
						pushed:     func() int { return pushed }, // written before the go statement or on the owner goroutine
						afterDrain: afterDrain,
						check: func(v item) error {
							if v.seq != next {
								return fmt.Errorf("got seq %d, want %d", v.seq, next)
							}
							next++
							return nil
						},
					})
					res <- ownerResult{st, err}
				}()
				r := <-res
				var lost *lostWakeupError
				if !c.wantLost {
					if r.err != nil {
						t.Fatalf("correct protocol: %v", r.err)
					}
					if r.st.delivered != total {
						t.Fatalf("correct protocol delivered %d of %d", r.st.delivered, total)
					}
					return
				}
				if !errors.As(r.err, &lost) {
					t.Fatalf("%v protocol: err = %v, want a lost wakeup to be detected (delivered %d of %d)", c.proto, r.err, r.st.delivered, total)
				}
				t.Logf("detected as intended: %v", lost)
				if lost.len != c.wantStranded || lost.pushed-lost.delivered != c.wantStranded {
					t.Errorf("stranded items: Len %d, pushed-delivered %d; want %d", lost.len, lost.pushed-lost.delivered, c.wantStranded)
				}
				// The items were stranded, not gone: the correct protocol's
				// Acknowledge+Drain still finds them.
				q.Acknowledge()
				if got := len(drainAll(q)); got != c.wantStranded {
					t.Errorf("drained %d stranded items afterwards, want %d", got, c.wantStranded)
				}
			})
		}
	}
}
