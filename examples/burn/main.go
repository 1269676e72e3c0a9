// Command burn keeps CPUs busy for a bounded time: the "other core kept
// busy" load under which timing-sensitive conformance cases must still
// never fail a correct reactor.
//
//	go run ./examples/burn --cpus 1 --for 20m &
//	go test -count=20 -run 'TestInProcessReference' ./conformance/
//
// It spins --cpus goroutines (each on its own thread) and exits by itself
// after --for, or on SIGTERM/SIGINT.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
)

func main() {
	cpus := flag.Int("cpus", 1, "busy threads (1..1024)")
	dur := flag.Duration("for", 10*time.Minute, "stop after this long (> 0, at most 24h)")
	flag.Parse()
	if *cpus < 1 || *cpus > 1024 || *dur <= 0 || *dur > 24*time.Hour {
		fmt.Fprintln(os.Stderr, "burn: --cpus must be 1..1024 and --for in (0, 24h]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < *cpus; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			x := uint64(i + 1)
			for ctx.Err() == nil {
				for j := 0; j < 1<<20; j++ { // check the context about every millisecond
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
				}
			}
			if x == 0 {
				fmt.Println(x) // keep the loop from being optimised away
			}
		}()
	}
	wg.Wait()
}
