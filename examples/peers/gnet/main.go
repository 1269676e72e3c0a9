// Command gnet is a byte-echo server on github.com/panjf2000/gnet/v2 (an
// event-loop library: epoll, WithMulticore: one event loop per CPU it may
// use, or --loops N of them), as a peer for reactorlab's matrix and
// conformance suite. See package peer for its flags. SO_REUSEPORT is off
// (gnet's default), so gnet runs a main reactor: one goroutine holds the
// listener in its own epoll set, accepts, and hands each connection to an
// event loop chosen round-robin (engine_unix.go activateReactors,
// acceptor_unix.go accept0), which owns it for its life. It echoes
// whatever each read brings, as gnet's own echo example does: gnet
// buffers what the peer does not read in user space.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/reactorlab/reactorlab/examples/peers/internal/peer"
)

type echo struct {
	gnet.BuiltinEventEngine
	addr string
	eng  gnet.Engine
	up   chan struct{}
}

func (e *echo) OnBoot(eng gnet.Engine) gnet.Action {
	e.eng = eng
	fmt.Fprintf(os.Stderr, "gnet: listening on %s\n", e.addr)
	close(e.up)
	return gnet.None
}

func (e *echo) OnTraffic(c gnet.Conn) gnet.Action {
	buf, err := c.Next(-1)
	if err != nil {
		return gnet.Close
	}
	if _, err := c.Write(buf); err != nil {
		return gnet.Close
	}
	return gnet.None
}

func main() {
	o, err := peer.Parse("gnet", os.Args[1:], "event loops besides the main reactor (gnet.WithNumEventLoop)")
	if err != nil {
		os.Exit(2)
	}
	ctx, cancel := o.Context()
	defer cancel()
	e := &echo{addr: o.Addr, up: make(chan struct{})}
	go func() {
		select {
		case <-ctx.Done():
		case <-e.up:
			<-ctx.Done()
		}
		select {
		case <-e.up:
			stopCtx, c := context.WithTimeout(context.Background(), 5*time.Second)
			defer c()
			e.eng.Stop(stopCtx)
		default:
			os.Exit(0) // stopped before it ever listened
		}
	}()
	opts := []gnet.Option{gnet.WithMulticore(true)}
	if o.Loops > 0 {
		opts = append(opts, gnet.WithNumEventLoop(o.Loops))
	}
	if err := gnet.Run(e, "tcp://"+o.Addr, opts...); err != nil {
		fmt.Fprintf(os.Stderr, "gnet: %v\n", err)
		os.Exit(1)
	}
}
