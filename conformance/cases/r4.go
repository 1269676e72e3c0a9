package cases

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/internal/procfs"
)

// r4Case is R4: with its descriptor table full the server does not spin,
// and once descriptors are free it serves new connections.
func r4Case() conformance.Case {
	_, spin := r4SpinLimit()
	_, full := r4FullTableLimit(r4Limit)
	return conformance.Case{
		ID:    "R4",
		Title: "EMFILE without busy loop, with recovery",
		Claim: fmt.Sprintf("with the descriptor table full, pending connections do not make the server spin, and once descriptors are free again new connections are served. Inconclusive unless the server is quiet while idle (else that is W2's failure), the limit of %d (or, for a server that cannot start under it, one applied once it is ready) is the one in force in every process that holds the listener, and one of them holds %s", r4Limit, full),
		Bound: fmt.Sprintf("server CPU ≤ %s while full, and while idle before it (a spinning accept loop is ~100%%; an idle server a few %%); a new connection echoed within %v after the others close", spin, r4Recovery),
		Needs: conformance.NeedProcess,
		Setup: conformance.Setup{FdLimit: r4Limit},
		Run:   runR4,
	}
}

// r4Limit is the descriptor limit R4 runs its target with.
const r4Limit = 48

func runR4(c *conformance.C) {
	inst := c.Instance()
	// Idle first: a server that spins with nothing to do spins at EMFILE
	// too, and that is W2's finding, not R4's.
	spin, spinArithmetic := r4SpinLimit()
	if idle := r4IdleCPU(c); idle > spin {
		c.Evidencef("server CPU %v in a %v window with two idle clients, before any descriptor pressure", idle, r4Window)
		c.Inconclusivef("the server spins while idle (%v CPU, over %s, no EMFILE involved: W2's claim), so a busy loop at a full table could not be told apart", idle, spinArithmetic)
	}
	base := usage(c)
	// Open more connections than the server has descriptors for, each
	// served once while it can be: the rest wait in the backlog (or are
	// shed by the server), keeping the listener readable.
	const conns = 64
	var links []*faults.TCPLink
	for i := 0; i < conns; i++ {
		l, err := faults.DialTCP(inst.Addr(), 2*time.Second)
		if err != nil {
			break // the backlog is full: as full as it gets
		}
		links = append(links, l)
	}
	defer func() {
		for _, l := range links {
			l.Close()
		}
	}()
	// Make the pending ones knock: a frame on every connection.
	for i, l := range links {
		l.Conn().SetWriteDeadline(time.Now().Add(time.Second))
		l.Write(dataFrame(uint64(i+1), 0, 16)) // shed connections fail here: expected
	}
	// Settle into the steady state first, then measure a window.
	time.Sleep(100 * time.Millisecond) // a measurement lead-in, not synchronisation
	full := usage(c)
	c.Logf("server had %d descriptors, limit %d; %d connections opened; server now has %d", base.Fds, c.FdLimit(), len(links), full.Fds)
	r4Precondition(c, len(links))
	u0 := usage(c)
	time.Sleep(r4Window) // the measurement window
	u1 := usage(c)
	cpu := u1.CPU - u0.CPU
	c.Evidencef("server CPU %v in a %v window with its descriptor table full (limit %d); bound %s", cpu, r4Window, c.FdLimit(), spinArithmetic)
	if cpu > spin {
		c.Fatalf("server spins while its descriptor table is full: %v CPU, over %s", cpu, spinArithmetic)
	}
	for _, l := range links {
		l.Close()
	}
	links = nil
	// Recovery: a new connection is served once descriptors are free.
	deadline := time.Now().Add(r4Recovery)
	var last error
	for time.Now().Before(deadline) {
		if last = r3One(inst.Addr(), 1000); last == nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // retrying a refused connection: nothing to wait on
	}
	c.Fatalf("no recovery: a new connection was not served within %v after the others closed: %v", r4Recovery, last)
}

// r4Window is R4's measurement window, idle and at the full table alike;
// r4Recovery is how soon after the others close a new connection must be
// served.
const (
	r4Window   = 500 * time.Millisecond
	r4Recovery = 5 * time.Second
)

// r4SpinLimit is the most CPU the server may use in r4Window, idle or at
// a full table: a quarter of it (a spinning accept loop takes all of it,
// an idle server a few per cent).
func r4SpinLimit() (limit time.Duration, arithmetic string) {
	limit = r4Window / 4
	return limit, fmt.Sprintf("a quarter of the %v window = %v", r4Window, limit)
}

// r4FullTableLimit is the descriptors a process at the descriptor limit
// must hold for its table to count as (nearly) full: all but 2 of the
// limit.
func r4FullTableLimit(limit int64) (full int64, arithmetic string) {
	full = limit - 2
	return full, fmt.Sprintf("all but 2 of the limit %d = %d descriptors", limit, full)
}

// r4IdleCPU is the server's CPU over r4Window with two connected clients,
// each served once, then idle.
func r4IdleCPU(c *conformance.C) time.Duration {
	for i := 0; i < 2; i++ {
		p := dial(c, fmt.Sprintf("idle conn %d", i+1), c.Instance().Addr())
		p.write(c, dataFrame(uint64(2000+i), 0, 8))
		p.expectEcho(c, uint64(2000+i), 0, 8, echoBound)
		defer p.close()
	}
	time.Sleep(100 * time.Millisecond) // a measurement lead-in, not synchronisation
	u0 := usage(c)
	time.Sleep(r4Window)
	return usage(c).CPU - u0.CPU
}

// r4Precondition ends the case unless the limit R4 set is the one in
// force in every process that serves the listener, and the table of one
// of them is (nearly) full: a server holding more descriptors than the
// limit proves the limit was not applied, and one whose table never
// fills was never at EMFILE. A server that died meanwhile fails.
func r4Precondition(c *conformance.C, opened int) {
	inst := c.Instance()
	limit := int64(c.FdLimit())
	if gone := serverGone(inst); gone != "" {
		c.Evidencef("sent: %d connections dialled at once, one 16 B frame each, against a descriptor limit of %d", opened, limit)
		c.Fatalf("the server stopped serving when its descriptor table filled: %s", gone)
	}
	serving, group, err := conformance.ServingProcesses(inst)
	if err != nil {
		c.Inconclusivef("could not find the process that serves the listener: %v", err)
	}
	for _, pid := range serving {
		soft, hard, err := procfs.ReadFdLimit(pid)
		if err != nil {
			c.Inconclusivef("reading the descriptor limit of the serving process %d: %v", pid, err)
		}
		n, err := procfs.CountFds(pid)
		if err != nil {
			c.Inconclusivef("counting the descriptors of the serving process %d: %v", pid, err)
		}
		c.Evidencef("serving process %d: %d descriptors open, RLIMIT_NOFILE soft %d hard %d", pid, n, soft, hard)
		if soft != limit {
			c.Inconclusivef("the serving process %d runs with a descriptor limit of %d, not the %d the case set (it set its own, or the limit never reached it): its table was never the one under test", pid, soft, limit)
		}
		if int64(n) > limit {
			c.Inconclusivef("the serving process %d holds %d descriptors, more than its limit of %d: the limit was not in force when they were opened", pid, n, limit)
		}
	}
	// The table that fills may be a worker's that was handed the
	// connections (a primary that accepts and passes them on): any process
	// of the group at the case's limit counts.
	most := -1
	for _, pid := range group {
		if soft, _, err := procfs.ReadFdLimit(pid); err != nil || soft != limit {
			continue
		}
		if n, err := procfs.CountFds(pid); err == nil {
			most = max(most, n)
		}
	}
	if full, arithmetic := r4FullTableLimit(limit); int64(most) < full {
		c.Inconclusivef("with %d connections opened against a limit of %d, no process of the server holds more than %d descriptors, fewer than %s: it does not fill its table (it caps or sheds connections first, or gives each connection a process of its own), so it never met EMFILE", opened, limit, most, arithmetic)
	}
}

// serverGone says why the instance no longer serves ("" while it does):
// no process left in its group, or its address refusing connections.
func serverGone(inst conformance.Instance) string {
	if g, ok := inst.(interface{ Group() ([]int, error) }); ok {
		if pids, err := g.Group(); err == nil && len(pids) == 0 {
			return "no process of it is left"
		}
	}
	conn, err := net.DialTimeout("tcp", inst.Addr(), time.Second)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Sprintf("its address %s refuses connections", inst.Addr())
	}
	if err == nil {
		conn.Close()
	}
	return ""
}
