//go:build linux

package reactors_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/wire"
)

// BenchmarkEcho64 measures pipelined echo of 64-byte DATA payloads (96-byte
// frames) through each reference reactor on loopback: 4 connections of an
// echoClient.
// It reports frames/s and allocs/frame: heap allocations in the whole
// process per echoed frame in steady state (the client allocates nothing
// per frame, so this bounds the reactor's from above).
func BenchmarkEcho64(b *testing.B) {
	for _, d := range designs.Names() {
		b.Run(string(d), func(b *testing.B) { benchEcho(b, d, reactors.DefaultConfig()) })
	}
}

// BenchmarkEcho64Offload is BenchmarkEcho64 with callbacks offloaded to a
// 2-worker pool (zero cost), measuring the ingress round trip.
func BenchmarkEcho64Offload(b *testing.B) {
	cfg := reactors.DefaultConfig()
	cfg.Workers = 2
	for _, d := range []reactors.DesignName{reactors.LT, reactors.ET} {
		b.Run(string(d), func(b *testing.B) { benchEcho(b, d, cfg) })
	}
}

func benchEcho(b *testing.B, design reactors.DesignName, cfg reactors.Config) {
	r := startBench(b, design, cfg)
	ec := dialEcho(b, r, 4)
	if err := ec.pump(20000); err != nil { // warm-up: buffers, slots, pools
		b.Fatal(err)
	}
	per := max(b.N/len(ec.conns), ec.batch)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0 := r.LoopCPU()
	b.ResetTimer()
	start := time.Now()
	if err := ec.pump(per); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cpu := r.LoopCPU() - cpu0
	runtime.ReadMemStats(&after)
	frames := float64(per * len(ec.conns))
	b.ReportMetric(frames/elapsed.Seconds(), "frames/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/frames, "allocs/frame")
	b.ReportMetric(float64(cpu.Nanoseconds())/frames, "loop-cpu-ns/frame")
}

// echoClient pipelines 64-byte DATA payloads (96-byte frames) on a few
// connections: per connection a writer sending batches of 64 frames and a
// reader counting echoes. A pump allocates a fixed amount (its goroutines
// and read buffers) whatever the number of frames.
type echoClient struct {
	conns []net.Conn
	block []byte // batch frames, back to back
	batch int
}

const echoPayload = 64
const echoFrameSize = wire.HeaderSize + echoPayload

func dialEcho(tb testing.TB, r *reactors.Reactor, conns int) *echoClient {
	tb.Helper()
	ec := &echoClient{batch: 64}
	for i := 0; i < conns; i++ {
		c, err := net.Dial("tcp", r.Addr().String())
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { c.Close() })
		ec.conns = append(ec.conns, c)
	}
	for i := 0; i < ec.batch; i++ {
		ec.block = wire.AppendFrame(ec.block, wire.KindData, 0, 1, uint64(i), 0, make([]byte, echoPayload))
	}
	return ec
}

// pump sends and receives n frames per connection.
func (ec *echoClient) pump(n int) error {
	var wg sync.WaitGroup
	errs := make([]error, 2*len(ec.conns))
	for i, c := range ec.conns {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for sent := 0; sent < n; sent += ec.batch {
				k := min(ec.batch, n-sent) * echoFrameSize
				if _, err := c.Write(ec.block[:k]); err != nil {
					errs[2*i] = err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			want := n * echoFrameSize
			for got := 0; got < want; {
				m, err := c.Read(buf[:min(len(buf), want-got)])
				if err != nil {
					errs[2*i+1] = fmt.Errorf("read after %d of %d bytes: %w", got, want, err)
					return
				}
				if got == 0 && binary.LittleEndian.Uint32(buf) != echoFrameSize-4 {
					errs[2*i+1] = fmt.Errorf("bad echo header % x", buf[:8])
					return
				}
				got += m
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && err != io.EOF {
			return err
		}
	}
	return nil
}

// BenchmarkStatsCost measures what the latency histograms cost: the
// pipelined echo of BenchmarkEcho64 with Config.Stats on and off, side by
// side for each design. Compare frames/s and loop-cpu-ns/frame of the pairs
// (docs/PERFORMANCE.md: the target is ≤ 3% of throughput).
func BenchmarkStatsCost(b *testing.B) {
	for _, d := range designs.Names() {
		for _, st := range []reactors.StatsMode{reactors.StatsOn, reactors.StatsOff} {
			cfg := reactors.DefaultConfig()
			cfg.Stats = st
			b.Run(string(d)+"/stats="+string(st), func(b *testing.B) { benchEcho(b, d, cfg) })
		}
	}
}

// BenchmarkEcho64Wait compares the two wait modes on the pipelined echo.
func BenchmarkEcho64Wait(b *testing.B) {
	for _, w := range []reactors.WaitMode{reactors.WaitPollFirst, reactors.WaitBlock} {
		cfg := reactors.DefaultConfig()
		cfg.Wait = w
		b.Run(string(w), func(b *testing.B) { benchEcho(b, reactors.LT, cfg) })
	}
}

// BenchmarkPingPong64 measures round trips of one 64-byte frame at a time
// on one connection (ns/op is the mean RTT), for each wait mode: here the
// loop goes idle between frames, so how it waits is most of the cost.
func BenchmarkPingPong64(b *testing.B) {
	for _, w := range []reactors.WaitMode{reactors.WaitPollFirst, reactors.WaitBlock} {
		for _, d := range []reactors.DesignName{reactors.LT, reactors.ET} {
			cfg := reactors.DefaultConfig()
			cfg.Wait = w
			b.Run(string(d)+"/"+string(w), func(b *testing.B) { benchPingPong(b, d, cfg) })
		}
	}
}

func benchPingPong(b *testing.B, design reactors.DesignName, cfg reactors.Config) {
	r := startBench(b, design, cfg)
	c, err := net.Dial("tcp", r.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	frame := wire.AppendFrame(nil, wire.KindData, 0, 1, 1, 0, make([]byte, 64))
	buf := make([]byte, len(frame))
	rtt := func() error {
		if _, err := c.Write(frame); err != nil {
			return err
		}
		_, err := io.ReadFull(c, buf)
		return err
	}
	for i := 0; i < 2000; i++ {
		if err := rtt(); err != nil {
			b.Fatal(err)
		}
	}
	cpu0 := r.LoopCPU()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := rtt(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((r.LoopCPU()-cpu0).Nanoseconds())/float64(b.N), "loop-cpu-ns/frame")
}

// startBench starts a reactor stopped at the end of the benchmark, with
// its loop threads on one CPU and the rest of the process (the client) on
// the others where there are two or more, as the lab places server and
// load generator: left to the scheduler, the loop and the client's eight
// goroutines share both CPUs and the figures are bimodal (2.2M against
// 3.0M frames/s for lt from one run to the next).
func startBench(tb testing.TB, design reactors.DesignName, cfg reactors.Config) *reactors.Reactor {
	r, err := designs.New(design, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	r.Start()
	tb.Cleanup(func() {
		r.Stop()
		r.Wait()
	})
	pinApart(tb, r.LoopThreads())
	return r
}

// pinApart puts the given threads on the last allowed CPU and every other
// thread of the process on the remaining ones, and undoes it at cleanup
// (threads started meanwhile inherit their creator's set). With one CPU it
// does nothing.
func pinApart(tb testing.TB, loops []int) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		tb.Fatalf("reading the CPU affinity: %v", err)
	}
	var cpus []int
	for i := 0; i < 1024; i++ {
		if all.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) < 2 {
		return
	}
	var server, client unix.CPUSet
	server.Set(cpus[len(cpus)-1])
	for _, c := range cpus[:len(cpus)-1] {
		client.Set(c)
	}
	setAll := func(loopSet, otherSet *unix.CPUSet) {
		tids, err := os.ReadDir("/proc/self/task")
		if err != nil {
			tb.Fatalf("listing threads: %v", err)
		}
		for _, e := range tids {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			set := otherSet
			if slices.Contains(loops, tid) {
				set = loopSet
			}
			// A thread that ended after the listing is no error.
			_ = unix.SchedSetaffinity(tid, set)
		}
	}
	setAll(&server, &client)
	tb.Cleanup(func() { setAll(&all, &all) })
}
