//go:build linux

package loadgen_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// BenchmarkCapacity measures, side by side in one run, the generator's
// capacity in frames it sends and checks per CPU-second of its process
// (getrusage) and what the lt reference reactor, in a child process,
// echoes per CPU-second of its process (the schedstat of its threads).
// gen/lt is the ratio of the two: the generator must reach >= 2, so that
// it is never the bottleneck. Every frame is counted once on each side (the
// generator sends, receives and checks it; lt reads and echoes it). Each
// iteration is a 1 s run; repeat with -count for the spread.
func BenchmarkCapacity(b *testing.B) {
	for _, tc := range []struct {
		hot, k, steady int
		rate           float64
	}{{hot: 1, k: 1}, {hot: 1, k: 16}, {hot: 4, k: 64}, {hot: 1, k: 1024}, {hot: 4, k: 256}, {hot: 16, k: 256},
		{steady: 1, rate: 100e3}, {steady: 1, rate: 300e3}, {steady: 4, rate: 1e6}} {
		name := fmt.Sprintf("hot=%d/k=%d", tc.hot, tc.k)
		if tc.steady > 0 {
			name = fmt.Sprintf("steady=%d/rate=%.0fk", tc.steady, tc.rate/1e3)
		}
		b.Run(name, func(b *testing.B) {
			r := startReactor(b, reactors.LT)
			cfg := loadgen.Config{DataAddr: r.Data, ControlAddr: r.Control, Hot: tc.hot, InFlight: tc.k,
				Steady: tc.steady, Rate: tc.rate, Window: 4096, Duration: time.Second, Drain: 200 * time.Millisecond}
			var frames, genNs, ltNs float64
			for b.Loop() {
				var ru0, ru1 unix.Rusage
				lt0, err := proc.ReadThreadCPU(r.Pid())
				if err != nil {
					b.Fatal(err)
				}
				unix.Getrusage(unix.RUSAGE_SELF, &ru0)
				res, err := loadgen.Run(context.Background(), cfg)
				unix.Getrusage(unix.RUSAGE_SELF, &ru1)
				lt1, err2 := proc.ReadThreadCPU(r.Pid())
				if err != nil || err2 != nil {
					b.Fatal(err, err2)
				}
				if !res.Valid {
					b.Fatalf("invalid: %q", res.Invalid)
				}
				frames += float64(res.Totals.Echoed)
				genNs += float64(cpuNs(ru1) - cpuNs(ru0))
				ltNs += float64(lt1 - lt0)
			}
			b.ReportMetric(frames/(genNs/1e9), "gen-frames/cpu-s")
			b.ReportMetric(frames/(ltNs/1e9), "lt-frames/cpu-s")
			b.ReportMetric(ltNs/genNs, "gen/lt")
			b.ReportMetric(frames/float64(b.N), "frames/op")
		})
	}
}

func cpuNs(ru unix.Rusage) int64 { return unix.TimevalToNsec(ru.Utime) + unix.TimevalToNsec(ru.Stime) }
