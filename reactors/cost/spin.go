package cost

import (
	"sync/atomic"
	"time"
)

// spinBatch is the number of xorshift steps between clock reads: about 0.3µs
// of work on a current x86 core, against some 30ns for a vDSO clock read, so
// Spin overshoots by well under a microsecond.
const spinBatch = 256

// spinSink keeps the arithmetic observable, so the compiler cannot drop it.
var spinSink atomic.Uint64

// Spin burns CPU on the calling thread until d of wall time has passed (by the
// monotonic clock), and returns at once if d <= 0. It never sleeps, blocks or
// yields: the loop is integer arithmetic with a clock read every spinBatch
// steps. If the OS deschedules the thread, or the Go scheduler preempts the
// goroutine (it does so to long-running goroutines after about 10ms), Spin
// still returns at d of wall time and has burnt correspondingly less CPU — the
// same as a real callback of that duration would.
func Spin(d time.Duration) {
	if d <= 0 {
		return
	}
	start := time.Now()
	x := uint64(0x2545f4914f6cdd1d) | uint64(d) // non-zero; xorshift keeps it so
	for {
		for range spinBatch {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		if time.Since(start) >= d {
			break
		}
	}
	if x == 0 { // never true; the compiler cannot prove it
		spinSink.Store(x)
	}
}
