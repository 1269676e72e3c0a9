// Command stdlib is a byte-echo server on the Go standard library's net
// package, one goroutine per connection: the design most Go servers start
// from, as a peer for reactorlab's matrix and conformance suite. See
// package peer for its flags; it echoes every byte it reads through a
// 64 KiB buffer per connection.
package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/reactorlab/reactorlab/examples/peers/internal/peer"
)

func main() {
	o, err := peer.Parse("stdlib", os.Args[1:], "")
	if err != nil {
		os.Exit(2)
	}
	ctx, cancel := o.Context()
	defer cancel()
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "stdlib: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "stdlib: listening on %s\n", ln.Addr())
	var (
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
		wg    sync.WaitGroup
	)
	go func() {
		<-ctx.Done()
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				break
			}
			// EMFILE and the like: back off as net/http's Server does
			// (5 ms, doubling to 1 s) rather than spin on a full table.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			fmt.Fprintf(os.Stderr, "stdlib: accept: %v; retrying in %v\n", err, backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			continue
		}
		backoff = 0
		mu.Lock()
		if ctx.Err() != nil {
			mu.Unlock()
			c.Close()
			break
		}
		conns[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			// Plain reads and writes through buf: hiding the connection's
			// ReadFrom/WriteTo keeps io.CopyBuffer off splice(2), which
			// a goroutine-per-connection server with its own logic would
			// not use. Returns at EOF, an error or Close.
			io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, buf)
			c.Close()
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
}
