//go:build linux

package reactors_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
	"github.com/reactorlab/reactorlab/reactors/reactortest"
	"github.com/reactorlab/reactorlab/wire"
)

// Callbacks offloaded to a pool come back through ingress in order.
//
// With -short on prio alone: the pool, ingress and the pool-wait path are
// the shared loop's, and TestRegressionPoolWaitRetry runs them in order on
// lt, et and prio-thread in -short too; prio is the design no other -short
// test offloads on.
func TestOffloadEchoInOrder(t *testing.T) {
	for _, d := range []reactors.DesignName{reactors.LT, reactors.ET, reactors.Prio, reactors.PrioThread} {
		t.Run(string(d), func(t *testing.T) {
			if testing.Short() && d != reactors.Prio {
				t.Skip("-short: prio alone (TestRegressionPoolWaitRetry offloads on this design)")
			}
			cfg := reactors.DefaultConfig()
			cfg.Workers = 2
			cfg.Callback = "uniform:0us-10us"
			reactortest.EndToEnd(t, func(c reactors.Config) (*reactors.Reactor, error) { return designs.New(d, c) }, cfg)
		})
	}
}

// STOP under hot load: admission closes, the ledger balances
// (accepted = completed + rejected), matches what the clients saw, and new
// connections are refused.
func TestStopUnderLoad(t *testing.T) {
	for _, d := range designs.Names() {
		t.Run(string(d), func(t *testing.T) {
			before := reactortest.TakeLeaks()
			cfg := reactors.DefaultConfig()
			cfg.Callback = "2us"
			r, err := designs.New(d, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r.Start()
			var echoed, rejected atomic.Uint64
			var wg sync.WaitGroup
			for i := 0; i < 4; i++ {
				wg.Add(2)
				conn, err := net.Dial("tcp", r.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				go func() { // hot sender until the reactor goes away
					defer wg.Done()
					frame := wire.AppendFrame(nil, wire.KindData, 0, 1, 0, 0, make([]byte, 64))
					batch := bytes.Repeat(frame, 64)
					for {
						if _, err := conn.Write(batch); err != nil {
							return
						}
					}
				}()
				go func() {
					defer wg.Done()
					defer conn.Close()
					dec := wire.NewDecoder(0)
					buf := make([]byte, 64<<10)
					for {
						n, err := conn.Read(buf)
						if err != nil {
							return
						}
						dec.Write(buf[:n])
						for {
							h, _, ok, err := dec.Next()
							if err != nil || !ok {
								break
							}
							switch h.Kind {
							case wire.KindData:
								echoed.Add(1)
							case wire.KindReject:
								rejected.Add(1)
							}
						}
					}
				}()
			}
			if !reactortest.WaitFor(10*time.Second, func() bool { return r.Stats().Counters.FramesEchoed > 20000 }) {
				t.Fatalf("no load reached the reactor: %+v", r.Stats().Counters)
			}
			ledger, err := reactortest.StopFrame(r.ControlAddr().String(), 20*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			// Admission is closed: the listener is gone (ONESHOT: the
			// connection is accepted and closed at once).
			if c, err := net.DialTimeout("tcp", r.Addr().String(), time.Second); err == nil {
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, rerr := c.Read(make([]byte, 1))
				c.Close()
				refused := rerr == io.EOF || errors.Is(rerr, syscall.ECONNRESET)
				if d != reactors.OneShot || !refused {
					t.Errorf("a new connection was accepted after STOP (read %d, %v)", n, rerr)
				}
			}
			stats, err := r.Wait()
			if err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if !ledger.Balanced() || ledger.Accepted == 0 {
				t.Fatalf("STOP_ACK ledger %+v does not balance", ledger)
			}
			if stats.Ledger.Accepted != ledger.Accepted || stats.Ledger.Rejected != ledger.Rejected {
				t.Fatalf("final ledger %+v != STOP_ACK %+v", stats.Ledger, ledger)
			}
			// Clients may miss echoes queued past the grace period, never
			// receive more than the ledger says.
			if echoed.Load() > ledger.Completed || rejected.Load() > ledger.Rejected {
				t.Fatalf("clients saw %d echoes and %d rejects; ledger %+v", echoed.Load(), rejected.Load(), ledger)
			}
			t.Logf("ledger %+v; clients saw %d echoes, %d rejects; stop observed p50 %v",
				ledger, echoed.Load(), rejected.Load(), time.Duration(stats.Histograms[reactors.HistStopObserve].P50))
			reactortest.CheckNoLeaks(t, before)
		})
	}
}

// Ten idle connections: a periodic timer wakes the loop every tick; a
// deadline timer with nothing due does not wake it at all.
func TestIdleWakeupsByTimerMode(t *testing.T) {
	for _, mode := range []reactors.TimerMode{reactors.TimerPeriodic, reactors.TimerDeadline} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := reactors.DefaultConfig()
			cfg.Timer = mode
			r := reactortest.Start(t, reactors.LT, cfg)
			for i := 0; i < 10; i++ {
				c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
			}
			if !reactortest.WaitFor(5*time.Second, func() bool { return r.Stats().Counters.ConnsAccepted == 10 }) {
				t.Fatal("connections not accepted")
			}
			if mode == reactors.TimerDeadline && !reactortest.Settled(r, 20*time.Millisecond, 5*time.Second) {
				t.Fatalf("deadline: loop never went idle: %+v", r.Stats().Counters)
			}
			const window = 300 * time.Millisecond
			w0 := r.Stats().Counters.EpollWaits
			time.Sleep(window) // a measurement window, not synchronisation
			w1 := r.Stats().Counters.EpollWaits
			waits := w1 - w0
			// periodic: one wake per 1 ms tick → ~300; demand ≥ 100 to allow a
			// loaded machine to coalesce ticks. deadline: nothing is due → 0;
			// allow 2 for a publication racing the window edges.
			if mode == reactors.TimerPeriodic && waits < 100 {
				t.Fatalf("periodic: %d epoll_waits in %v, want ≥ 100", waits, window)
			}
			if mode == reactors.TimerDeadline && waits > 2 {
				t.Fatalf("deadline: %d epoll_waits in %v with nothing due, want ≤ 2", waits, window)
			}
			t.Logf("%s: %d epoll_waits in %v", mode, waits, window)
		})
	}
}

// A worker result whose connection closed must be dropped and counted, even
// when the next connection got the same fd number; the FdIdentity mutant
// delivers it to the newcomer — the check must see that. The fd's reuse
// is the precondition, seen in this process's descriptor table: where the
// newcomer got another number (a descriptor opened or freed elsewhere in
// between), the attempt proves nothing either way and is made again.
func TestStaleResultNeverReachesNewConnection(t *testing.T) {
	for _, mutant := range []bool{false, true} {
		name := "correct"
		if mutant {
			name = "fd-identity-mutant"
		}
		t.Run(name, func(t *testing.T) {
			const attempts = 5
			for i := 1; !staleResultAttempt(t, mutant); i++ {
				if i == attempts {
					t.Fatalf("the new connection never got the closed one's fd in %d attempts: the precondition was not established", attempts)
				}
			}
		})
	}
}

// staleResultAttempt runs TestStaleResultNeverReachesNewConnection once
// and reports whether the new connection reused the old one's fd (only
// then has it judged anything).
func staleResultAttempt(t *testing.T, mutant bool) bool {
	cfg := reactors.DefaultConfig()
	cfg.Workers = 1
	// The result is due 400 ms after the offload: time enough, on a busy
	// machine, to see the old connection closed and the new one accepted
	// before it (checked below).
	cfg.Callback = "400ms"
	cfg.Faults.FdIdentity = mutant
	r := reactortest.Start(t, reactors.LT, cfg) // stopped when the test ends
	accepted := func(n uint64) func() bool {
		return func() bool { return r.Stats().Counters.ConnsAccepted >= n }
	}
	before := socketFds(t)
	old, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !reactortest.WaitFor(5*time.Second, accepted(1)) {
		t.Fatal("old connection never accepted")
	}
	oldFd := acceptedFd(t, before, old)
	if err := old.Send(wire.KindData, 1, 1, []byte("for the old connection")); err != nil {
		t.Fatal(err)
	}
	if !reactortest.WaitFor(5*time.Second, func() bool { return r.Stats().Counters.TasksOffloaded == 1 }) {
		t.Fatal("frame never offloaded")
	}
	// Reset, not FIN: an orderly close is a half-close the reactor must
	// still answer; a reset ends the connection at once.
	old.Conn.(*net.TCPConn).SetLinger(0)
	old.Close()
	if !reactortest.WaitFor(5*time.Second, func() bool { return r.Stats().Counters.ConnsClosed == 1 }) {
		t.Fatal("close never observed")
	}
	before = socketFds(t)
	fresh, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if !reactortest.WaitFor(5*time.Second, accepted(2)) {
		t.Fatal("new connection never accepted")
	}
	// The precondition: the new connection is registered, on the old
	// one's fd, before the result comes back.
	if c := r.Stats().Counters; c.StaleResults+c.FramesEchoed > 0 {
		t.Fatalf("the result was handled before the new connection was accepted (%+v): the precondition was not established", c)
	}
	if freshFd := acceptedFd(t, before, fresh); freshFd != oldFd {
		t.Logf("the new connection got fd %d, the closed one had %d: nothing to judge, again", freshFd, oldFd)
		return false
	}
	// Wait until the reactor has handled the result (dropped or
	// delivered), then look.
	if !reactortest.WaitFor(5*time.Second, func() bool {
		c := r.Stats().Counters
		return c.StaleResults+c.FramesEchoed >= 1
	}) {
		t.Fatal("worker result never handled")
	}
	h, p, err := fresh.Recv(200 * time.Millisecond)
	if mutant {
		if err != nil {
			t.Fatalf("mutant: the stale result did not reach the new connection on fd %d (%v)", oldFd, err)
		}
		t.Logf("mutant delivered %v %q to the new connection", h.Kind, p)
		return true
	}
	if err == nil {
		t.Fatalf("new connection received %v seq %d %q meant for the closed one", h.Kind, h.Seq, p)
	}
	if !reactortest.IsTimeout(err) {
		t.Fatal(err)
	}
	if !reactortest.WaitFor(2*time.Second, func() bool { return r.Stats().Counters.StaleResults == 1 }) {
		t.Fatalf("stale_results = %d, want 1", r.Stats().Counters.StaleResults)
	}
	return true
}

// socketFds is the set of this process's descriptors that are sockets.
func socketFds(t *testing.T) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	fds := map[int]bool{}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			fds[fd] = true
		}
	}
	return fds
}

// acceptedFd is the descriptor the reactor accepted c on: the one socket
// of this process not in before that is not c's own.
func acceptedFd(t *testing.T, before map[int]bool, c *reactortest.Client) int {
	t.Helper()
	own := -1
	sc, err := c.Conn.(*net.TCPConn).SyscallConn()
	if err == nil {
		err = sc.Control(func(fd uintptr) { own = int(fd) })
	}
	if err != nil {
		t.Fatal(err)
	}
	var added []int
	for fd := range socketFds(t) {
		if !before[fd] && fd != own {
			added = append(added, fd)
		}
	}
	if len(added) != 1 {
		t.Fatalf("sockets opened beside the dial: %v (want the accepted one alone)", added)
	}
	return added[0]
}

// STOP frames are accepted on control connections only.
func TestStopOnDataConnectionRejected(t *testing.T) {
	r := reactortest.Start(t, reactors.LT, reactors.DefaultConfig())
	c, err := reactortest.Dial(r.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(wire.KindStop, 0, 1, nil); err != nil {
		t.Fatal(err)
	}
	h, _, err := c.Recv(5 * time.Second)
	if err != nil || h.Kind != wire.KindReject {
		t.Fatalf("STOP on data connection: got %v %v, want REJECT", h.Kind, err)
	}
}
