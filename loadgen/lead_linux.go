//go:build linux

package loadgen

// The hot lead (Config.HotLead): the hot sources send alone first, then
// the others connect, and the measured schedule starts once every loop's
// sources are connected.

import (
	"context"
	"fmt"

	"github.com/reactorlab/reactorlab/internal/epollsys"
)

// lead runs the loop's part of the hot lead. Its hot sources, connected
// and started (begin) at the group's start of sending, send alone until
// HotLead; then its other sources connect, within ConnectTimeout, while
// the hot ones keep sending; the loop tells the group (g.joined, exactly
// once, whatever happens) and goes on serving until every loop has told
// it and the group sets g.schedStart (g.measuring). It reports false, with
// no error, when the run ends instead: interrupted, or another loop
// failed. An error is this loop's failure: a source that could not
// connect, or the loop's own system calls.
func (l *loop) lead() (proceed bool, err error) {
	g := l.g
	l.leading = true
	defer func() { l.leading = false }()
	joined := false
	tell := func(err error) {
		if !joined {
			joined = true
			g.joined <- err
		}
	}
	defer func() { tell(err) }()
	for _, c := range l.conns {
		c.begin()
	}
	leadEnd, joining := int64(l.cfg.HotLead), false
	for {
		l.clock()
		switch {
		case g.measuring.Load():
			return true, nil
		case g.interrupted.Load() || g.aborted.Load():
			return false, nil
		}
		if !joining && l.now >= leadEnd {
			joining = true
			if err := l.connectLate(); err != nil {
				return false, err
			}
		}
		if joining && !joined {
			done, err := l.lateConnected()
			if err != nil {
				return false, err
			}
			if done {
				tell(nil)
			}
		}
		deadline := l.tick()
		switch {
		case !joining:
			deadline = min(deadline, leadEnd)
		case !joined:
			deadline = min(deadline, l.connectDeadline)
		}
		if err := l.wait(deadline); err != nil {
			return false, err
		}
	}
}

// connectLate starts connecting the sources that follow the lead (steady
// and control), within ConnectTimeout from now; from now on the loop
// serves every source.
func (l *loop) connectLate() error {
	l.connectDeadline = l.now + int64(l.cfg.ConnectTimeout)
	l.conns = l.all
	for _, c := range l.all[l.nHot:] {
		if err := c.connect(); err != nil {
			return fmt.Errorf("loadgen: connecting %s to %s after the hot lead: %w", c.name, c.addr(), err)
		}
		c.connectDeadline = l.connectDeadline
	}
	return nil
}

// lateConnected reports whether every source that follows the lead is
// connected; one that failed, or the connect deadline passing, is an
// error naming them.
func (l *loop) lateConnected() (bool, error) {
	pending := 0
	for _, c := range l.all[l.nHot:] {
		switch c.state {
		case stConnecting:
			pending++
		case stDead:
			return false, fmt.Errorf("loadgen: connecting %s to %s after the hot lead: %s", c.name, c.addr(), c.ended)
		}
	}
	if pending > 0 && l.now >= l.connectDeadline {
		return false, fmt.Errorf("loadgen: %d connections not established within %v (connect-timeout) after the hot lead", pending, l.cfg.ConnectTimeout)
	}
	return pending == 0, nil
}

// awaitLead waits until every loop has told (g.joined) how its part of
// the hot lead went; if every one connected its sources, it sets the
// start of the measured schedule, common to every loop, and wakes them.
// An error is the run's when it was interrupted during the lead; a loop's
// own failure is that loop's error (group.run joins them).
func (g *group) awaitLead(ctx context.Context) error {
	ok := true
	for range g.loops {
		if err := <-g.joined; err != nil {
			ok = false
		}
	}
	switch {
	case g.interrupted.Load():
		return fmt.Errorf("loadgen: interrupted during the hot lead: %w", context.Cause(ctx))
	case !ok || g.aborted.Load():
		return nil
	}
	g.schedStart = epollsys.Nanotime() - g.t0
	g.measuring.Store(true) // after schedStart: a loop that sees it reads schedStart
	g.wakeAll(nil)
	return nil
}
