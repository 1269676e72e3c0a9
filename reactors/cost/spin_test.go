package cost

import (
	"fmt"
	"testing"
	"time"
)

// TestSpinWall: Spin returns no earlier than d (by construction; checked on
// every trial) and returns at once for d <= 0 (best of 5, so a descheduled
// moment cannot fail it).
func TestSpinWall(t *testing.T) {
	for _, d := range []time.Duration{1 * us, 50 * us, 200 * us} {
		for range 5 {
			start := time.Now()
			Spin(d)
			if el := time.Since(start); el < d {
				t.Fatalf("Spin(%v) returned after %v", d, el)
			}
		}
	}
	for _, d := range []time.Duration{0, -1, -time.Hour} {
		best := time.Hour
		for range 5 {
			start := time.Now()
			Spin(d)
			best = min(best, time.Since(start))
		}
		if best > 100*us {
			t.Errorf("Spin(%v) took %v, want an immediate return", d, best)
		}
	}
}

func BenchmarkSpin(b *testing.B) {
	for _, d := range []time.Duration{1 * us, 10 * us, 50 * us} {
		b.Run(fmt.Sprint(d), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Spin(d)
			}
			// ns/op minus d is the overshoot.
		})
	}
}
