//go:build linux

package reactors

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors/slots"
	"github.com/reactorlab/reactorlab/wire"
)

func isTooLarge(err error) bool { return errors.Is(err, wire.ErrTooLarge) }

// onStopFrame handles STOP on a control connection. The first STOP (frame
// or Stop) wins; a later or concurrent one is answered with REJECT. The
// winner's connection is answered by STOP_ACK once every loop has
// quiesced; in a shared layout it is held unarmed until then. It reports whether
// s is still open.
func (l *Loop) onStopFrame(s *Source, h wire.Header) bool {
	now := nanotime()
	at := now
	if d := now - int64(h.SendNs); h.SendNs != 0 && d > 0 && d < 60e9 {
		at = int64(h.SendNs) // sender on this host used CLOCK_MONOTONIC
	}
	if !l.r.requestStop(at, l, s.ref, &h) {
		return l.reject(s, h, "stop already in progress")
	}
	if l.shared {
		// Whichever loop quiesces last sends STOP_ACK on s; until then no
		// other loop may own it, so it is held, unarmed.
		l.setState(s, stateHeld)
	}
	return true
}

// stopStep runs at the top of every round once a stop was requested. First
// sight: record the observation latency and close admission. When no
// offloaded callback is outstanding the loop quiesces (its ledger is final
// and it reads no more). After STOP_ACK it exits once every out-queue has
// drained or the grace period has passed.
func (l *Loop) stopStep(now int64) (exit bool) {
	r := l.r
	if !l.stopSeen {
		l.stopSeen = true
		l.hist.record(l.hist.stopObserve, now-r.stopAt.Load())
		l.stopObservedNs.Store(max(0, now-r.stopAt.Load()))
		l.closeListeners()
		l.refuseBacklog()
		if r.stopfd >= 0 && int(r.stopObserved.Add(1)) == len(r.loops) {
			// Every worker has seen the level-triggered stopfd; stop it
			// waking them.
			_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, r.stopfd, nil)
		}
	}
	if !l.quiesced && l.tasks > 0 && now > r.stopAt.Load()+int64(l.cfg.StopGrace) {
		// Offloaded callbacks that did not come back within the grace
		// period are rejected, so the stop ends in bounded time; their
		// results, if they still arrive, are dropped uncounted.
		l.stats.QuiesceTimeouts += uint64(l.tasks)
		l.ledger.Rejected += uint64(l.tasks)
		l.ledger.Abandoned += uint64(l.tasks)
		l.tasks = 0
	}
	if !l.quiesced && l.tasks == 0 {
		l.quiesced = true
		if !l.shared { // a shared table's connections belong to whichever loop holds them
			l.table.Range(func(_ slots.Ref, s *Source) bool {
				if s.kind == kindConn {
					l.updateInterest(s)
				}
				return true
			})
			if r.draining.Load() {
				l.sweepForDrain() // before the ledger is final: it answers frames
			}
		}
		r.quiesce(l)
	}
	if len(l.discardMore) > 0 {
		l.retryDiscards()
	}
	if r.acked.Load() {
		if r.draining.Load() {
			return r.drained() || now > r.graceDeadline.Load()
		}
		return r.outPending.Load() <= 0 || now > r.graceDeadline.Load()
	}
	return false
}

// closeListeners closes admission: new connections are refused by the
// kernel. In a shared layout the loops share the listeners: there accepted
// connections are closed at once instead (accept checks the stop), and the
// listeners close at exit.
func (l *Loop) closeListeners() {
	if l.shared {
		return
	}
	for _, ref := range l.listeners {
		if s, ok := l.table.Get(ref); ok {
			if s.borrowed {
				_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, s.fd, nil)
				l.r.releaseSharedListener()
			} else if l.completion {
				l.closeRingListener(s)
			} else {
				unix.Close(s.fd)
			}
			s.fd = -1
			l.table.Free(ref)
		}
	}
	l.listeners = l.listeners[:0]
}

// sendStopAck queues STOP_ACK with the final ledger on the connection that
// asked for the stop.
func (l *Loop) sendStopAck(ref slots.Ref) {
	s, ok := l.table.Get(ref)
	if !ok || s.state == stateClosed {
		return // the requester left; the ledger is still in the final stats
	}
	h := l.r.stopHdr.Load()
	l.r.ledgerMu.Lock()
	payload := stopAckPayload(l.r.ledger)
	l.r.ledgerMu.Unlock()
	frame := wire.AppendFrame(nil, wire.KindStopAck, 0, h.Token, h.Seq, h.SendNs, payload)
	l.lendOut(s)
	if err := s.out.Append(frame); err != nil {
		l.stats.HardCapClosed++
		l.closeSource(s)
		return
	}
	if s.state == stateHeld {
		l.setState(s, stateReading) // the flush pauses it if its out-queue is above the watermark
	}
	if l.flush(s) && l.oneShot {
		l.rearm.Rearm(s)
	}
}
