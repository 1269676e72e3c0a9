//go:build linux

// Command echo is reactorlab's example black-box target: a plain TCP
// byte-echo server. Reference reactors echo DATA and PING frames unchanged,
// so a byte-echo server is a valid target for the cases a black box can be
// held to. Run the conformance suite against it with
//
//	go run ./cmd/reactorlab conform --target cmd:'go run ./examples/echo'
//
// It listens on --listen, else $REACTORLAB_LISTEN, else 127.0.0.1:7070, and
// prints "echo: listening on ADDR" on stderr once listening. Each connection
// gets a goroutine that echoes through a 64 KiB buffer. SIGTERM or SIGINT
// closes the listener and every connection, waits for the handlers and exits
// 0; so does the end of --lifetime (default 1h): every run is bounded.
//
// --bug NAME injects a known bug, so the suite's black-box mode can be shown
// to catch it (the case that should, in brackets):
//
//	busy-idle        each connection's goroutine spins on non-blocking reads
//	                 while the connection is idle: CPU burns when idle (W2)
//	no-backpressure  a reader reads everything into an unbounded buffer
//	                 whether or not the client reads the echoes, a writer
//	                 writes from it: memory grows under a slow consumer (W1)
//	leak-on-close    when a client closes, the server never closes its side:
//	                 the fd stays open after its goroutine exits (I2)
//	drop-partial     reads shorter than 32 bytes are dropped, as by a server
//	                 that assumes every read holds a whole frame header:
//	                 fragmented frames are lost (F1)
//	exit-on-emfile   an accept that fails (EMFILE: the descriptor table is
//	                 full) ends the server, as gnet v2.9.7's engine does (R4)
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

var bugs = map[string]string{
	"busy-idle":       "spin on non-blocking reads while a connection is idle (W2)",
	"no-backpressure": "buffer everything read, without bound, whether or not the client reads (W1)",
	"leak-on-close":   "never close the server side when a client closes: fds leak (I2)",
	"drop-partial":    "drop reads shorter than 32 bytes: fragmented frames are lost (F1)",
	"exit-on-emfile":  "exit when an accept fails, as when the descriptor table is full (R4)",
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	names := slices.Sorted(maps.Keys(bugs))
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	listen := fs.String("listen", "", "address host:port (default $REACTORLAB_LISTEN, else 127.0.0.1:7070)")
	lifetime := fs.Duration("lifetime", time.Hour, "stop by itself after this long: every run is bounded")
	bug := fs.String("bug", "", "inject a known bug: "+strings.Join(names, ", "))
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: echo [--listen ADDR] [--lifetime D] [--bug NAME]")
		fs.PrintDefaults()
		fmt.Fprintln(fs.Output(), "bugs:")
		for _, n := range names {
			fmt.Fprintf(fs.Output(), "  %-16s %s\n", n, bugs[n])
		}
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if _, ok := bugs[*bug]; *bug != "" && !ok {
		fmt.Fprintf(os.Stderr, "echo: unknown --bug %q; accepted: %s\n", *bug, strings.Join(names, ", "))
		return 2
	}
	// Catch signals before listening: a harness may send SIGTERM as soon as
	// the port accepts.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	addr := *listen
	if addr == "" {
		addr = os.Getenv("REACTORLAB_LISTEN")
	}
	if addr == "" {
		addr = "127.0.0.1:7070"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "echo: listening on %s\n", ln.Addr())

	ctx, cancel := context.WithTimeout(ctx, *lifetime)
	defer cancel()
	context.AfterFunc(ctx, func() { ln.Close() })

	s := &server{bug: *bug, conns: map[net.Conn]bool{}}
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			break
		}
		if err != nil { // EMFILE and the like: wait, the lifetime bounds it all
			fmt.Fprintln(os.Stderr, "echo:", err)
			if s.bug == "exit-on-emfile" {
				os.Exit(1)
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return 0
}

type server struct {
	bug   string
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool // open connections (leak-on-close keeps closed clients' here)
}

func (s *server) serve(c net.Conn) {
	defer s.wg.Done()
	switch s.bug {
	case "busy-idle":
		spin(c)
	case "no-backpressure":
		unbounded(c)
	case "drop-partial":
		echo(c, 32)
	default:
		echo(c, 1)
	}
	if s.bug == "leak-on-close" {
		return // c stays in s.conns, so no finalizer closes its fd either
	}
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// echo writes back every read of at least min bytes.
func echo(c net.Conn, min int) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n >= min {
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// spin echoes with non-blocking reads retried at once, never waiting.
func spin(c net.Conn) {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 64<<10)
	for {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), buf)
			return true // done: never park on the poller
		}); err != nil {
			return
		}
		if rerr == syscall.EAGAIN || rerr == syscall.EINTR {
			continue
		}
		if rerr != nil || n == 0 {
			return
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
	}
}

// unbounded reads into a list of chunks that only grows; a writer drains it
// as fast as the client reads.
func unbounded(c net.Conn) {
	var mu sync.Mutex
	more := sync.NewCond(&mu)
	var pending net.Buffers
	eof := false
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		mu.Lock()
		defer mu.Unlock()
		for {
			for len(pending) == 0 && !eof {
				more.Wait()
			}
			if len(pending) == 0 {
				return
			}
			out := pending
			pending = nil
			mu.Unlock()
			_, err := out.WriteTo(c)
			mu.Lock()
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		mu.Lock()
		if n > 0 {
			pending = append(pending, bytes.Clone(buf[:n]))
		}
		eof = err != nil
		mu.Unlock()
		more.Signal()
		if err != nil {
			break
		}
	}
	<-wrote
}
