//go:build linux

// Command echo is reactorlab's example black-box target: a plain TCP
// byte-echo server. Reference reactors echo DATA and PING frames unchanged,
// so a byte-echo server is a valid target for the cases a black box can be
// held to. Build it, then run the conformance suite against the binary
// (go run would compile it on every start, which on a cold build cache
// can take longer than the 10 s start timeout):
//
//	go build -o reactorlab ./cmd/reactorlab && go build -o echo ./examples/echo
//	./reactorlab conform --target cmd:'./echo'
//
// It listens on --listen, else $REACTORLAB_LISTEN, else 127.0.0.1:7070, and
// prints "echo: listening on ADDR" on stderr once listening. With --control,
// else $REACTORLAB_CONTROL_LISTEN, it serves the same byte echo on a second,
// control address (the suite's PINGs, S2), printing "echo: control on
// ADDR". Each connection gets a goroutine that echoes through a 64 KiB
// buffer.
//
// SIGTERM or SIGINT (or the end of --lifetime, default 1h: every run is
// bounded) stops it as the suite's stop contract asks (conform --stop
// sigterm): the listeners close, so new connections are refused; each
// connection's reader is interrupted, what it had read is written back,
// then the server half-closes (FIN) and reads and discards what the client
// still sends until the client's FIN, for at most 3 s, so that closing
// with unread data cannot turn into an RST; then it closes and exits 0.
// Handlers still running 1 s after that are closed.
//
// Three flags are legitimate server features, used to show that the cases
// that depend on a condition the server never reaches report
// "inconclusive" instead of passing:
//
//	--max-conns N    a connection accepted while N are open is closed at
//	                 once (0, the default: no limit), so the server never
//	                 fills its descriptor table (R4)
//	--nofile N       at start, set the server's own RLIMIT_NOFILE, soft and
//	                 hard, to N, exiting 1 with the reason if that fails
//	                 (raising the hard limit needs root: CAP_SYS_RESOURCE),
//	                 so the limit the suite set is not the one in force
//	                 (R4; 0, the default: leave it)
//	--sockbuf BYTES  set SO_SNDBUFFORCE and SO_RCVBUFFORCE to BYTES (as
//	                 setsockopt(2) takes it: the kernel doubles it) on the
//	                 listener and every accepted connection; without the
//	                 privilege for them (root: CAP_NET_ADMIN) it says so
//	                 once and sets SO_SNDBUF and SO_RCVBUF instead, which
//	                 net.core.wmem_max and rmem_max cap. Kernel buffers
//	                 that large absorb every echo, so none is queued in the
//	                 server (0, the default: the kernel's autotuning)
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
//	free-at-eof      a reader reads into a bounded queue (4 MiB: it waits
//	                 while the queue is full), a writer writes it out; at
//	                 the reader's EOF the server closes the connection at
//	                 once, dropping the echoes still queued, as the libevent
//	                 book's echo server frees its bufferevent at EOF (I3).
//	                 Without the bug that serve writes everything queued,
//	                 then half-closes and closes
//	slow-control     a control connection's echo waits until no data
//	                 connection has read anything for 100 ms, as a server
//	                 that serves control only when the data plane is idle:
//	                 PINGs starve under hot data (S2)
//	rst-on-term      at SIGTERM every connection is closed with SO_LINGER
//	                 0: an RST, not a FIN (X3)
//	close-at-fin-on-term  at SIGTERM every echo is written back and the
//	                 server half-closes (FIN), then closes at once instead
//	                 of reading and discarding to the client's EOF: what
//	                 the client sends after the FIN is answered with RST,
//	                 which would destroy echoes it had not read yet (X3)
//	drop-on-term     connections are served through the bounded queue of
//	                 free-at-eof (its correct half); at SIGTERM the writer
//	                 stops at once and the queue is dropped, then the
//	                 server half-closes: the echoes of what it had read are
//	                 lost (X3)
//	keep-conns-on-term  at SIGTERM the listeners close, but the connections
//	                 are served on until their clients close them: they
//	                 outlive any grace period (X4)
//	serve-after-term at SIGTERM the connections are ended as without a bug,
//	                 but the listeners stay open and new connections are
//	                 served until the process exits (X5)
//	herd             the data listener is waited on by 4 threads, each with
//	                 an epoll set of its own holding it without
//	                 EPOLLEXCLUSIVE: every connection wakes all 4, and one
//	                 accepts it (the thundering herd, as in tidwall/evio
//	                 #73) (M4)
//	herd-poll        the data listener is waited on by 2 threads, each in
//	                 poll(2), whose waits are never exclusive: every
//	                 connection wakes both, and one accepts it (M4)
//	drop-short-write each echo is one non-blocking write: what the kernel
//	                 does not take at once is dropped, as by a server that
//	                 ignores write()'s count (W3)
//	overlapping-writes  a read of less than 4 KiB is written back by a
//	                 goroutine of its own with non-blocking writes retried
//	                 every 50 µs, without waiting for the writes of earlier
//	                 reads, as overlapping asynchronous writes do (forbidden
//	                 in Asio, common); larger reads are written in order by
//	                 one writer. Only small pieces pending behind a full
//	                 socket race each other and reorder the stream (W3)
//	block-loop-on-full  every echo is written under one lock held across
//	                 the whole (blocking) write, as a one-thread loop that
//	                 switches a connection to blocking writes when it sees
//	                 EAGAIN: a client that does not read holds the lock,
//	                 and every other connection's echoes wait (W5)
//	crash-at-stop    at SIGTERM the server panics instead of stopping (exit
//	                 status 2): a crash at stop, a finding of its own that
//	                 no case's claim is charged with
//
// Five more flags are legitimate behaviours of real runtimes that the suite
// must not mistake for failures:
//
//	--term-exit N       exit with status N after a stop by SIGTERM or SIGINT
//	                    (0, the default); 143 (128 + SIGTERM) is what a JVM
//	                    that runs its shutdown hooks, and socat, exit with
//	--arena BYTES       on the first read of data, allocate and touch a
//	                    buffer pool of BYTES kept for the life of the
//	                    process, as Netty's pooled allocator takes its
//	                    arenas' chunks on first use: memory that grows with
//	                    the first traffic, whoever reads it
//	--reserve-fds N     at start, open N descriptors (of /dev/null) and
//	                    keep them, refusing to start (exit 1) under a
//	                    descriptor limit below N + 16, as HAProxy sizes its
//	                    tables by maxconn and refuses a limit too low
//	--lazy-unix-socket  on the first connection closed once data has been
//	                    read, open a Unix socket pair kept for the life of
//	                    the process, as the JDK does on the first channel
//	                    close: one more descriptor that is not a connection
//	--churn BYTES       while a data connection is open, a goroutine of its
//	                    own allocates a fresh buffer of BYTES every 10 ms,
//	                    touches every page of it and drops it, as a server
//	                    that rebuilds a per-connection buffer sized by its
//	                    largest message: CPU spent on memory by threads that
//	                    block between rounds, which is no busy loop
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var bugs = map[string]string{
	"busy-idle":            "spin on non-blocking reads while a connection is idle (W2)",
	"no-backpressure":      "buffer everything read, without bound, whether or not the client reads (W1)",
	"leak-on-close":        "never close the server side when a client closes: fds leak (I2)",
	"drop-partial":         "drop reads shorter than 32 bytes: fragmented frames are lost (F1)",
	"exit-on-emfile":       "exit when an accept fails, as when the descriptor table is full (R4)",
	"free-at-eof":          "close at the reader's EOF at once, dropping the echoes still queued (I3)",
	"slow-control":         "echo on the control address only once the data connections have been idle for 100 ms (S2)",
	"rst-on-term":          "at SIGTERM close every connection with SO_LINGER 0: RST, not FIN (X3)",
	"close-at-fin-on-term": "at SIGTERM write every echo back, half-close, then close without reading to the client's EOF: its later bytes are reset (X3)",
	"drop-on-term":         "serve through a bounded queue and drop it at SIGTERM: echoes of what was read are lost (X3)",
	"keep-conns-on-term":   "at SIGTERM close the listeners but serve the connections on until their clients close (X4)",
	"serve-after-term":     "at SIGTERM end the connections, but keep accepting and serving new ones (X5)",
	"herd":                 "4 threads wait on the data listener, each in an epoll set of its own, without EPOLLEXCLUSIVE: every connection wakes them all (M4)",
	"herd-poll":            "2 threads wait on the data listener, each in poll(2): every connection wakes both (M4)",
	"drop-short-write":     "echo with one non-blocking write each: what the kernel does not take at once is dropped (W3)",
	"crash-at-stop":        "panic at SIGTERM instead of stopping: a crash at stop (a finding of its own)",
	"block-loop-on-full":   "write every echo under one lock held across the blocking write: a client that does not read freezes the others (W5)",
	"overlapping-writes":   "write each read under 4 KiB back from a goroutine of its own, not waiting for earlier writes: a short write of a small piece reorders the stream (W3)",
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	opt, code, ok := parseFlags(args)
	if !ok {
		return code
	}
	if opt.nofile > 0 {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: opt.nofile, Max: opt.nofile}); err != nil {
			hint := ""
			if errors.Is(err, syscall.EPERM) {
				hint = " (raising the hard limit needs root: CAP_SYS_RESOURCE; and no limit may exceed fs.nr_open)"
			}
			fmt.Fprintf(os.Stderr, "echo: --nofile %d: setrlimit RLIMIT_NOFILE: %v%s\n", opt.nofile, err, hint)
			return 1
		}
	}
	if opt.reserveFds > 0 {
		var rl syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			fmt.Fprintln(os.Stderr, "echo: getrlimit RLIMIT_NOFILE:", err)
			return 1
		}
		if rl.Cur < uint64(opt.reserveFds)+16 {
			fmt.Fprintf(os.Stderr, "echo: --reserve-fds %d needs a descriptor limit of at least %d; RLIMIT_NOFILE is %d\n", opt.reserveFds, opt.reserveFds+16, rl.Cur)
			return 1
		}
		for range opt.reserveFds {
			if _, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err != nil {
				fmt.Fprintln(os.Stderr, "echo: --reserve-fds:", err)
				return 1
			}
		}
	}
	// Catch signals before listening: a harness may send SIGTERM as soon as
	// the port accepts.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	bufs := &socketBuffers{size: opt.sockbuf}
	var ln net.Listener
	var err error
	switch opt.bug {
	case "herd":
		ln, err = listenHerd(listenAddr(opt.listen, "REACTORLAB_LISTEN", "127.0.0.1:7070"), herdEpoll)
	case "herd-poll":
		ln, err = listenHerd(listenAddr(opt.listen, "REACTORLAB_LISTEN", "127.0.0.1:7070"), herdPoll)
	default:
		ln, err = listen(opt.listen, "REACTORLAB_LISTEN", "127.0.0.1:7070", bufs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "echo: listening on %s\n", ln.Addr())
	listeners := []net.Listener{ln}
	if ctl, err := listen(opt.control, "REACTORLAB_CONTROL_LISTEN", "", bufs); err != nil {
		fmt.Fprintln(os.Stderr, "echo: control:", err)
		ln.Close()
		return 1
	} else if ctl != nil {
		fmt.Fprintf(os.Stderr, "echo: control on %s\n", ctl.Addr())
		listeners = append(listeners, ctl)
	}

	ctx, cancel := context.WithTimeout(ctx, opt.lifetime)
	defer cancel()
	s := &server{bug: opt.bug, maxConns: opt.maxConns, lazyUnix: opt.lazyUnix, arenaSize: opt.arena, churn: opt.churn, conns: map[net.Conn]bool{}}
	for i, l := range listeners {
		s.accepting.Add(1)
		go func() {
			defer s.accepting.Done()
			s.acceptAll(l, bufs, i == 1)
		}()
	}
	<-ctx.Done()
	if opt.bug == "crash-at-stop" {
		panic("echo: crash at stop (--bug crash-at-stop)")
	}
	s.stop(listeners)
	return opt.termExit
}

// echoOptions are the command's flags, once parsed and checked.
type echoOptions struct {
	termExit, arena   int
	churn             int
	reserveFds        int
	lazyUnix          bool
	listen, bug       string
	control           string
	lifetime          time.Duration
	maxConns, sockbuf int
	nofile            uint64
}

// parseFlags parses and checks args; when not ok, code is the exit code
// (0 after --help, 2 for a bad flag, which it has said on stderr).
func parseFlags(args []string) (opt echoOptions, code int, ok bool) {
	names := slices.Sorted(maps.Keys(bugs))
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	fs.StringVar(&opt.listen, "listen", "", "address host:port (default $REACTORLAB_LISTEN, else 127.0.0.1:7070)")
	fs.StringVar(&opt.control, "control", "", "also serve the echo on this control address host:port (default $REACTORLAB_CONTROL_LISTEN, else none)")
	fs.DurationVar(&opt.lifetime, "lifetime", time.Hour, "stop by itself after this long: every run is bounded")
	fs.StringVar(&opt.bug, "bug", "", "inject a known bug: "+strings.Join(names, ", "))
	fs.IntVar(&opt.maxConns, "max-conns", 0, "close at once a connection accepted while this many are open (0: no limit)")
	fs.Uint64Var(&opt.nofile, "nofile", 0, "set this process's RLIMIT_NOFILE, soft and hard, to N at start (0: leave it; raising the hard limit needs CAP_SYS_RESOURCE)")
	fs.IntVar(&opt.termExit, "term-exit", 0, "exit with this status after a stop by SIGTERM or SIGINT (143: as a JVM or socat)")
	fs.IntVar(&opt.reserveFds, "reserve-fds", 0, "open N descriptors at start and keep them; refuse to start under a descriptor limit below N + 16, as HAProxy does for its maxconn (0: none)")
	fs.IntVar(&opt.arena, "arena", 0, "on the first read of data, allocate and touch a buffer pool of BYTES kept for the process's life, as Netty's pooled allocator does (0: none)")
	fs.IntVar(&opt.churn, "churn", 0, "while a data connection is open, allocate and touch a fresh buffer of BYTES for it every 10 ms (0: none)")
	fs.BoolVar(&opt.lazyUnix, "lazy-unix-socket", false, "open a Unix socket pair on the first connection closed and keep it, as the JDK does")
	fs.IntVar(&opt.sockbuf, "sockbuf", 0, "set SO_SNDBUFFORCE and SO_RCVBUFFORCE (without the privilege: SO_SNDBUF, SO_RCVBUF) to BYTES on the listener and every connection (0: leave them)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: echo [--listen ADDR] [--control ADDR] [--lifetime D] [--max-conns N] [--nofile N] [--sockbuf BYTES] [--bug NAME]")
		fs.PrintDefaults()
		fmt.Fprintln(fs.Output(), "bugs:")
		for _, n := range names {
			fmt.Fprintf(fs.Output(), "  %-16s %s\n", n, bugs[n])
		}
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return opt, 0, false
		}
		return opt, 2, false
	}
	if _, ok := bugs[opt.bug]; opt.bug != "" && !ok {
		fmt.Fprintf(os.Stderr, "echo: unknown --bug %q; accepted: %s\n", opt.bug, strings.Join(names, ", "))
		return opt, 2, false
	}
	if opt.reserveFds < 0 || opt.reserveFds > 1<<16 {
		fmt.Fprintf(os.Stderr, "echo: --reserve-fds %d: want 0 .. 65536\n", opt.reserveFds)
		return opt, 2, false
	}
	if opt.arena < 0 || opt.arena > 1<<30 {
		fmt.Fprintf(os.Stderr, "echo: --arena %d: want 0 .. 1 GiB\n", opt.arena)
		return opt, 2, false
	}
	if opt.churn < 0 || opt.churn > 256<<20 {
		fmt.Fprintf(os.Stderr, "echo: --churn %d: want 0 .. 256 MiB\n", opt.churn)
		return opt, 2, false
	}
	if opt.termExit < 0 || opt.termExit > 255 {
		fmt.Fprintf(os.Stderr, "echo: --term-exit %d: want an exit status 0..255\n", opt.termExit)
		return opt, 2, false
	}
	if opt.maxConns < 0 {
		fmt.Fprintf(os.Stderr, "echo: --max-conns %d: want >= 0 (0: no limit)\n", opt.maxConns)
		return opt, 2, false
	}
	if opt.sockbuf < 0 || opt.sockbuf > math.MaxInt32/2 {
		fmt.Fprintf(os.Stderr, "echo: --sockbuf %d: want 0 (leave them) .. %d bytes\n", opt.sockbuf, math.MaxInt32/2)
		return opt, 2, false
	}
	return opt, 0, true
}

// listenAddr is addr, else $env, else def.
func listenAddr(addr, env, def string) string {
	if addr == "" {
		addr = os.Getenv(env)
	}
	if addr == "" {
		addr = def
	}
	return addr
}

// listen listens on addr, else $env, else def (listenAddr), with the
// listener's buffers set by bufs; all three "" is no listener (nil, nil).
func listen(addr, env, def string, bufs *socketBuffers) (net.Listener, error) {
	addr = listenAddr(addr, env, def)
	if addr == "" {
		return nil, nil
	}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		// Set on the listener too: the window scale its handshakes offer
		// is chosen from its receive buffer, before accept.
		bufs.apply(rc, "the listener")
		return nil
	}}
	return lc.Listen(context.Background(), "tcp", addr)
}

// acceptAll accepts connections until ln is closed, and serves each in a
// goroutine of its own (control: ln is the control address), its buffers
// set by bufs: one accepted while maxConns are open is closed at once. An
// accept that fails is retried after 10 ms (with the exit-on-emfile bug,
// it ends the process). One accepted once the server is stopping is ended
// as the others were (s.stop).
func (s *server) acceptAll(ln net.Listener, bufs *socketBuffers, control bool) {
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
		full := s.maxConns > 0 && len(s.conns) >= s.maxConns
		if !full {
			s.conns[c] = true
			s.wg.Add(1)
		}
		stopping := s.stopping
		s.mu.Unlock()
		if full {
			c.Close()
			continue
		}
		if rc, err := c.(syscall.Conn).SyscallConn(); err == nil {
			bufs.apply(rc, c.RemoteAddr().String())
		}
		if stopping && s.bug != "serve-after-term" {
			s.endConn(c)
		}
		go s.serve(c, control)
	}
}

// closeAll closes every open connection and waits for their handlers.
func (s *server) closeAll() {
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

type server struct {
	bug       string
	maxConns  int // 0: no limit
	wg        sync.WaitGroup
	accepting sync.WaitGroup // the accept loops
	mu        sync.Mutex
	conns     map[net.Conn]bool // open connections (leak-on-close keeps closed clients' here)
	stopping  bool              // SIGTERM, SIGINT or the lifetime: connections are being ended
	// arenaSize is --arena: arena is allocated, once, on the first read
	// of data.
	arenaSize int
	arenaOnce sync.Once
	arena     []byte
	// churn is --churn: the bytes each open data connection's churner
	// allocates and touches every churnEvery (0: no churner).
	churn int
	// loop is the one lock of the block-loop-on-full bug's writes.
	loop sync.Mutex
	// lazyUnix: open unixPair on the first connection closed once data
	// has been read (lastDataRead set).
	lazyUnix bool
	unixOnce sync.Once
	unixPair [2]int
	// lastDataRead is when a data connection last read something
	// (UnixNano), for the slow-control bug.
	lastDataRead atomic.Int64
}

// socketBuffers sets a socket's send and receive buffers to size bytes
// (0: leaves them): with SO_SNDBUFFORCE and SO_RCVBUFFORCE, which ignore
// net.core.wmem_max and rmem_max but need CAP_NET_ADMIN; refused those,
// it says so once and sets SO_SNDBUF and SO_RCVBUF, which the limits cap.
type socketBuffers struct {
	size      int
	fellBack  atomic.Bool // SO_*BUFFORCE was refused once: use SO_*BUF
	warnOnce  sync.Once
	errorOnce sync.Once
}

// apply sets rc's buffers; what names the socket in a message.
func (b *socketBuffers) apply(rc syscall.RawConn, what string) {
	if b.size == 0 {
		return
	}
	var err error
	if cerr := rc.Control(func(fd uintptr) { err = b.set(int(fd)) }); cerr != nil {
		err = cerr
	}
	if err != nil {
		// The connection is served with the kernel's buffers; say why, once.
		b.errorOnce.Do(func() { fmt.Fprintf(os.Stderr, "echo: --sockbuf %d on %s: %v\n", b.size, what, err) })
	}
}

func (b *socketBuffers) set(fd int) error {
	if !b.fellBack.Load() {
		err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUFFORCE, b.size)
		if err == nil {
			err = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, b.size)
		}
		if !errors.Is(err, syscall.EPERM) {
			return os.NewSyscallError("setsockopt SO_SNDBUFFORCE/SO_RCVBUFFORCE", err)
		}
		b.fellBack.Store(true)
		b.warnOnce.Do(func() {
			fmt.Fprintf(os.Stderr, "echo: --sockbuf %d: SO_SNDBUFFORCE/SO_RCVBUFFORCE refused (%v: they need CAP_NET_ADMIN); "+
				"setting SO_SNDBUF/SO_RCVBUF instead, capped by net.core.wmem_max/rmem_max\n", b.size, err)
		})
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, b.size); err != nil {
		return os.NewSyscallError("setsockopt SO_SNDBUF", err)
	}
	return os.NewSyscallError("setsockopt SO_RCVBUF", syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_RCVBUF, b.size))
}

// serve serves c (control: from the control address) until its reader
// ends; once the server is stopping it then ends c as the stop contract
// asks (endGracefully) before closing it.
func (s *server) serve(c net.Conn, control bool) {
	defer s.wg.Done()
	if s.churn > 0 && !control {
		done := make(chan struct{})
		churned := make(chan struct{})
		go func() {
			defer close(churned)
			churn(s.churn, done)
		}()
		defer func() { close(done); <-churned }()
	}
	switch {
	case control && s.bug == "slow-control":
		s.echoWhenDataIdle(c)
	case control:
		echo(c, 1, nil)
	case s.bug == "busy-idle":
		spin(c)
	case s.bug == "no-backpressure":
		unbounded(c)
	case s.bug == "drop-partial":
		echo(c, 32, &s.lastDataRead)
	case s.bug == "free-at-eof":
		queued(c, true)
	case s.bug == "drop-on-term":
		queued(c, false)
	case s.bug == "drop-short-write":
		echoDroppingRest(c)
	case s.bug == "overlapping-writes":
		echoOverlapping(c)
	case s.bug == "block-loop-on-full":
		s.echoUnderLoopLock(c)
	case s.arenaSize > 0:
		echo(&arenaConn{Conn: c, s: s}, 1, &s.lastDataRead)
	default:
		echo(c, 1, &s.lastDataRead)
	}
	if s.bug == "leak-on-close" {
		return // c stays in s.conns, so no finalizer closes its fd either
	}
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
	if stopping && s.bug != "rst-on-term" {
		endGracefully(c, s.bug == "close-at-fin-on-term")
	}
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
	if s.lazyUnix && s.lastDataRead.Load() != 0 {
		s.unixOnce.Do(func() {
			pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
			if err != nil {
				fmt.Fprintln(os.Stderr, "echo: --lazy-unix-socket:", err)
				return
			}
			s.unixPair = pair // kept for the life of the process
		})
	}
}

// echo writes back every read of at least min bytes, noting the time of
// each read in lastRead (nil: not noted).
func echo(c net.Conn, min int, lastRead *atomic.Int64) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if lastRead != nil && n > 0 {
			lastRead.Store(time.Now().UnixNano())
		}
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
