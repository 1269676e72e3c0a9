package cases

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/internal/procfs"
	"github.com/reactorlab/reactorlab/reactors"
)

// i2Case is I2: connections reset while the server holds their echoes
// leave no descriptor, slot or unaccounted frame behind.
func i2Case() conformance.Case {
	return conformance.Case{
		ID:         "I2",
		Title:      "reset with work pending leaves nothing behind",
		Claim:      "connections reset by their clients while the server holds their echoes (or has stopped reading them for backpressure), with callbacks in flight, leave no descriptor, slot or unaccounted frame behind. Inconclusive unless the server was seen holding echoes or paused for at least one of them",
		WireFaults: []string{"reset"},
		Bound: fmt.Sprintf("each of %d connections is filled until the server stops reading it (its receive queue still for %v while the client's writes block, its end open: inet_diag of both ends, each socket tied to the connection by its cookie), at most the kernel's buffer maxima + %d MiB; a server that took all that without pausing counts as holding echoes only once it has read everything and delivers %d KiB beyond what the kernel's queues held (within %v); within %v of the resets (a reset is seen by the next epoll_wait, within a round) the server's sockets (process targets) or open connections (in-process) are back to the baseline; at the end accepted = completed + rejected",
			i2Conns, fillStill, fillHeadroom>>20, i2Confirm>>10, i2ConfirmBound, i2Bound),
		Setup:   conformance.Setup{Tweak: offloaded("fixed:20us")},
		Timeout: 90 * time.Second, // 4 fills ≤ 15 s each (+ ≤ 3 s to confirm) + the release ≤ 3 s
		Run:     runI2,
	}
}

// i2Bound is how long after the resets a server may take to let their
// sockets go: a reset is reported by the next epoll_wait (EPOLLERR and
// EPOLLHUP are reported whatever the interest), within one round of a
// loop, milliseconds; 3 s is a margin of hundreds for a loaded machine or
// a garbage-collected runtime.
const i2Bound = 3 * time.Second

// I2 resets i2Conns connections; one that took all the fill without
// pausing counts as holding echoes once i2Confirm bytes beyond the
// kernel's queues come back within i2ConfirmBound (confirmHeld).
const (
	i2Conns        = 4
	i2Confirm      = 64 << 10
	i2ConfirmBound = 3 * time.Second
)

func runI2(c *conformance.C) {
	inst := c.Instance()
	var was i2Before
	was.usage = usage(c)
	was.fds = openFds(inst)
	if st, err := inst.Stats(); err == nil {
		was.stats, was.live = st, true
	}
	if !was.live && was.fds == nil && was.usage.Fds < 0 {
		// An in-process server without counters (GoServer): the
		// descriptors are the test process's own, its clients' among them.
		c.Skipf("the target shows neither its open connections (no counters) nor descriptors of its own (no process of its own): whether it lets the reset connections go cannot be seen")
	}
	limit, why := fillLimit(c)
	c.Logf("%s", why)
	const conns = i2Conns
	if established := leaveLoaded(c, limit, conns); established == 0 {
		c.Inconclusivef("the server was not seen holding echoes or pausing for any of the %d connections (see the evidence): nothing was pending when they went away", conns)
	}
	awaitReleased(c, inst, was, conns)
	if inst.Reference() == nil {
		return
	}
	f := c.Stop()
	finalStats(c, f)
	l := f.Stats.Ledger
	c.Evidencef("final ledger: accepted %d, completed %d, rejected %d (abandoned %d); connections accepted %d, closed %d",
		l.Accepted, l.Completed, l.Rejected, l.Abandoned, f.Stats.Counters.ConnsAccepted, f.Stats.Counters.ConnsClosed)
	if !l.Balanced() {
		c.Fatalf("ledger does not balance: accepted %d ≠ completed %d + rejected %d", l.Accepted, l.Completed, l.Rejected)
	}
	if f.Stats.Counters.ConnsAccepted != f.Stats.Counters.ConnsClosed {
		c.Fatalf("%d connections accepted, %d closed", f.Stats.Counters.ConnsAccepted, f.Stats.Counters.ConnsClosed)
	}
}

// i2Before is the server as I2 found it before its connections: its
// usage, its open descriptors (nil if they cannot be listed) and, if it
// reports them (live), its statistics.
type i2Before struct {
	usage conformance.Usage
	fds   []string
	stats reactors.Stats
	live  bool
}

// leaveLoaded dials conns connections (tokens 1..conns), fills each to
// limit so that the server holds echoes, and leaves each with the echoes
// unread, closing the odd tokens' and resetting the even tokens' (the
// kernel answers the server with RST either way). It returns how many
// were seen holding echoes or pausing.
func leaveLoaded(c *conformance.C, limit int64, conns int) (established int) {
	for i := 0; i < conns; i++ {
		token := uint64(i + 1)
		how := map[bool]string{true: "close", false: "reset"}[i%2 == 0]
		l := dialLoaded(c, fmt.Sprintf("conn %d (%s)", token, how), token)
		// Filled until the server stops reading: a server that holds
		// megabytes without pausing yet may still push back further on
		// (a proxy's backend), and what is pending then is what the
		// claim is about.
		f := fillLoaded(c, l, limit, 0, false)
		c.Evidencef("%s: %s", l.name, f.why)
		switch {
		case f.paused:
			established++
		case f.held >= holdSome:
			ok, why := confirmHeld(c, l, i2Confirm, i2ConfirmBound)
			c.Evidencef("%s: %s", l.name, why)
			// Reading back let the server hand some of what it held to
			// the kernel: it counts only if it still holds echoes, with
			// the path back backed up, when the client goes.
			if ok && l.sample() == nil && l.held() >= holdSome && l.q.outputBlocked() {
				established++
			} else if ok {
				c.Evidencef("%s: after that, it no longer held %d bytes with the path back backed up (%v): nothing pending at the reset", l.name, holdSome, l.q)
			}
		}
		// Either way the client leaves with echoes unread, so the kernel
		// answers the server with RST.
		if how == "reset" {
			l.conn.SetLinger(0)
		}
		l.conn.Close()
	}
	return established
}

// awaitReleased polls, for i2Bound, until the server has let go of the
// conns connections: by its own count if it reports one, else by the TCP
// sockets it holds, else by its descriptor count. A TCP socket that was
// not there before is what the reset connections left behind: their own
// ends, or a connection opened for them (a proxy's to its backend). Other
// descriptors, Unix sockets included, may appear once (the Go runtime's
// netpoller and the JDK's Unix socket are created lazily) and are not the
// case's business; a count could hide one socket behind another that
// closed meanwhile, so each is identified by its inode.
func awaitReleased(c *conformance.C, inst conformance.Instance, was i2Before, conns int) {
	baseSockets := socketSet(was.fds)
	deadline := time.Now().Add(i2Bound)
	for {
		var open int64
		var nowFds []string
		if was.live {
			st, _ := inst.Stats()
			open = int64(st.Counters.ConnsAccepted-was.stats.Counters.ConnsAccepted) - int64(st.Counters.ConnsClosed-was.stats.Counters.ConnsClosed)
			if open == 0 {
				break
			}
		} else if was.fds != nil {
			nowFds = openFds(inst)
			left, err := tcpSockets(newSockets(nowFds, baseSockets))
			if err != nil {
				c.Inconclusivef("cannot tell the server's TCP sockets from its other descriptors: %v", err)
			}
			if len(left) == 0 {
				break
			}
		} else if now := usage(c); now.Fds <= was.usage.Fds {
			break
		}
		if time.Now().After(deadline) {
			if was.live {
				c.Fatalf("%d of %d connections still open in the reactor %v after their clients reset them", open, conns, i2Bound)
			}
			c.Evidencef("server descriptors before: %s", strings.Join(was.fds, " "))
			c.Evidencef("server descriptors after:  %s", strings.Join(nowFds, " "))
			left, _ := tcpSockets(newSockets(nowFds, baseSockets))
			c.Fatalf("server still has %d TCP connections it did not have before, %v after %d clients reset their connections: %s", len(left), i2Bound, conns, strings.Join(left, "; "))
		}
		time.Sleep(20 * time.Millisecond) // polling a count in another process: nothing to wait on
	}
}

// openFds lists the descriptors of a process target's process group
// (the server may be a wrapper's child) and what they refer to, as
// "pid:fd→target"; nil for in-process targets.
func openFds(inst conformance.Instance) []string {
	g, ok := inst.(interface{ Group() ([]int, error) })
	if !ok {
		return nil
	}
	pids, err := g.Group()
	if err != nil {
		return nil
	}
	out := []string{}
	for _, pid := range pids {
		fds, _ := procfs.ReadFds(pid)
		// In the order of the descriptors' names, as they were always listed.
		slices.SortFunc(fds, func(a, b procfs.Fd) int { return strings.Compare(strconv.Itoa(a.Num), strconv.Itoa(b.Num)) })
		for _, f := range fds {
			out = append(out, fmt.Sprintf("%d:%d→%s", pid, f.Num, f.Target))
		}
	}
	return out
}

// socketSet is the set of sockets ("socket:[inode]") among fds, as
// openFds lists them.
func socketSet(fds []string) map[string]bool {
	set := map[string]bool{}
	for _, f := range fds {
		if i := strings.Index(f, "socket:"); i >= 0 {
			set[f[i:]] = true
		}
	}
	return set
}

// newSockets lists the descriptors of fds that are sockets not in base.
func newSockets(fds []string, base map[string]bool) []string {
	var out []string
	for _, f := range fds {
		if i := strings.Index(f, "socket:"); i >= 0 && !base[f[i:]] {
			out = append(out, f)
		}
	}
	return out
}

// confirmHeld establishes by delivery that the server holds at least want
// bytes of echoes in its own buffers: once the server has read everything
// it was sent (nothing unread at its end, nothing unsent at the client's,
// its end open), the client reads what the kernel holds on the way back
// and want bytes more, within bound. Those can only have come from the
// server's buffers; a server that dropped what the subtraction counted
// (held) has nothing to send, or sends the stream with a gap, which the
// check of every byte finds. It reports whether the bytes came, and what
// was seen.
func confirmHeld(c *conformance.C, l *loaded, want int64, bound time.Duration) (bool, string) {
	deadline := time.Now().Add(bound)
	for {
		if err := l.sample(); err != nil {
			return false, fmt.Sprintf("socket queues: %v", err)
		}
		if !l.q.serverOpen() {
			return false, fmt.Sprintf("the server's end is no longer open (%v)", l.q)
		}
		if l.q.serverUnread == 0 && l.q.clientUnsent == 0 {
			break
		}
		if time.Now().After(deadline) {
			return false, fmt.Sprintf("the server did not read everything it was sent within %v (%v)", bound, l.q)
		}
		time.Sleep(10 * time.Millisecond) // the server is reading: a poll of another process's progress
	}
	from, candidate := l.read, l.held()
	target := l.read + l.q.clientUnread + l.q.serverUnsent + want
	for l.read < target {
		if time.Now().After(deadline) {
			return false, fmt.Sprintf("counted %d bytes held, but only %d of the %d bytes beyond the kernel's queues arrived within %v: it did not hold them", candidate, max(0, l.read-(target-want)), want, bound)
		}
		if _, err := l.readSome(int(min(target-l.read, 64<<10)), 50*time.Millisecond); err != nil {
			return false, fmt.Sprintf("counted %d bytes held, but reading them: %v", candidate, err)
		}
	}
	return true, fmt.Sprintf("counted %d bytes held; %d bytes read back, %d of them beyond what the kernel's queues held: the server held them", candidate, l.read-from, want)
}
