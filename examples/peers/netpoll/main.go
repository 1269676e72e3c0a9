// Command netpoll is a byte-echo server on github.com/cloudwego/netpoll
// (CloudWeGo's event-loop library: epoll pollers, handlers run on a
// goroutine pool, zero-copy buffers), as a peer for reactorlab's matrix
// and conformance suite. See package peer for its flags. netpoll runs
// GOMAXPROCS/20+1 pollers (netpoll_unix.go; one on up to 39 CPUs), or
// --loops N: the listener is on one of them (netpoll_server.go Run,
// pollmanager.Pick), which accepts inline, and each connection is put on
// a poller round-robin, which owns it for its life. Each time data arrives
// it echoes all that is buffered.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cloudwego/netpoll"

	"github.com/reactorlab/reactorlab/examples/peers/internal/peer"
)

func handle(ctx context.Context, c netpoll.Connection) error {
	r, w := c.Reader(), c.Writer()
	n := r.Len()
	if n == 0 {
		return nil
	}
	buf, err := r.Next(n)
	if err != nil {
		return err
	}
	if _, err := w.WriteBinary(buf); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return r.Release()
}

func main() {
	o, err := peer.Parse("netpoll", os.Args[1:], "pollers (netpoll.SetNumLoops)")
	if err != nil {
		os.Exit(2)
	}
	ctx, cancel := o.Context()
	defer cancel()
	if o.Loops > 0 {
		if err := netpoll.SetNumLoops(o.Loops); err != nil {
			fmt.Fprintf(os.Stderr, "netpoll: --loops %d: %v\n", o.Loops, err)
			os.Exit(2)
		}
	}
	ln, err := netpoll.CreateListener("tcp", o.Addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "netpoll: %v\n", err)
		os.Exit(1)
	}
	loop, err := netpoll.NewEventLoop(handle)
	if err != nil {
		fmt.Fprintf(os.Stderr, "netpoll: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "netpoll: listening on %s\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- loop.Serve(ln) }()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(os.Stderr, "netpoll: %v\n", err)
			os.Exit(1)
		}
	case <-ctx.Done():
		stopCtx, c := context.WithTimeout(context.Background(), 5*time.Second)
		defer c()
		loop.Shutdown(stopCtx)
	}
}
