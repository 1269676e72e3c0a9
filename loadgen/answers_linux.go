//go:build linux

package loadgen

// The receiving side of a source: reading, cutting the answer stream into
// frames, settling and checking each one, recording latencies.

import (
	"encoding/binary"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/internal/epollsys"
	"github.com/reactorlab/reactorlab/wire"
)

// onReadable reads once and handles every complete frame.
func (c *conn) onReadable() {
	l := c.l
	n, e := epollsys.Read(c.fd, l.readBuf)
	now := l.clock()
	if e == unix.EAGAIN || e == 0 && n < len(l.readBuf) {
		c.urgentReadShort()
	}
	switch {
	case e == unix.EAGAIN:
		return
	case e != 0:
		c.peerEnded(os.NewSyscallError("read", e))
		return
	case n == 0:
		c.peerEnded(errEOF)
		return
	}
	c.onAnswers(l.readBuf[:n], now)
}

// onAnswers handles the bytes of one read, received at now: it settles
// every frame they complete, records their latencies, and sends what the
// source may send in their place: a hot source refills; a steady or control
// source sends only if its due frames were waiting for the window. One that
// was not waiting sends at its next deadline, as tick finds it: at once for
// a frame already due, and at the send grain for steady sources batched by
// it, so that every due frame of a grain goes out in one write
// (TestSteadyWritesOncePerGrain). Sending the frames due when an answer
// arrived split a grain's batch: one steady source at 100k frames/s against
// lt made 0.29-0.34 writes per frame instead of 0.18-0.19, and lt as many
// reads and writes with it.
func (c *conn) onAnswers(b []byte, now int64) {
	l := c.l
	c.split.feed(b)
	answered := 0
	// The latencies of the echoes: lat is class "data" ("control" on a
	// control connection), raw is "data-uncorrected" of a steady source (a
	// hot source's are the same values as lat: it has no schedule).
	lat, raw := l.scratch[0][:0], l.scratch[1][:0]
	for {
		f, ok, err := c.split.next()
		if err != nil {
			c.flushLatencies(lat, raw, now)
			c.streamBroken(err)
			return
		}
		if !ok {
			break
		}
		s, how := c.settle(f)
		if s == nil {
			continue
		}
		answered++
		if how != settledEcho {
			continue
		}
		switch c.kind {
		case kindHot:
			if s.actual >= l.schedStart { // not a frame of the hot lead
				lat = append(lat, now-s.actual)
			}
		case kindSteady:
			lat = append(lat, now-s.stamp)
			raw = append(raw, now-s.actual)
		case kindControl:
			lat = append(lat, now-s.stamp)
			if now >= l.measureFrom {
				c.health.observe(now - s.stamp)
			}
		}
	}
	c.flushLatencies(lat, raw, now)
	if c.state == stDead {
		return
	}
	if answered > 0 {
		if c.service != nil && c.serviceFrom >= 0 {
			c.service.Record(time.Duration(now - c.serviceFrom))
		}
		c.serviceFrom = -1
		if c.sentOutstanding() > 0 {
			c.serviceFrom = now
		}
		if c.state == stOpen && !c.busy() && (c.kind == kindHot || c.blockedSince >= 0) {
			c.resume()
		}
	}
}

// flushLatencies records the latencies onAnswers gathered from answers
// received at now (see there).
func (c *conn) flushLatencies(lat, raw []int64, now int64) {
	l := c.l
	if len(lat) > 0 && l.rec != nil { // no recorder during a hot lead: nothing measured
		measured := now >= l.measureFrom && now < l.sendEnd
		switch c.kind {
		case kindHot:
			if measured {
				c.measuredEchoed += uint64(len(lat))
				l.hotLog.AddBatch(now, lat)
			}
			l.cData.RecordBatch(lat)
			l.cRaw.RecordBatch(lat)
		case kindSteady:
			if measured {
				l.steadyLog.AddBatch(now, lat)
			}
			l.cData.RecordBatch(lat)
			l.cRaw.RecordBatch(raw)
			if l.cSteady != nil {
				l.cSteady.RecordBatch(lat)
			}
		case kindControl:
			if measured {
				l.ctrlLog.AddBatch(now, lat)
			}
			l.cControl.RecordBatch(lat)
		}
	}
	l.scratch[0], l.scratch[1] = lat, raw
}

type settleHow uint8

const (
	settledEcho settleHow = iota + 1
	settledReject
	settledCorrupt
)

// settle handles one received frame (as splitter.next returns it) and
// returns the slot it settled (nil if it settled none: a duplicate, a
// stranger, a STOP answer). An echo is checked field by field where it
// lies; the rare cases decode the whole header.
func (c *conn) settle(f []byte) (*slot, settleHow) {
	l := c.l
	kind, token, seq := wire.Kind(f[4]), binary.LittleEndian.Uint64(f[8:]), binary.LittleEndian.Uint64(f[16:])
	switch {
	case kind == c.frameKind:
		if token != c.token {
			c.foreign(frameHeader(f))
			return nil, 0
		}
		s := c.lookup(kind, seq)
		if s == nil {
			return nil, 0
		}
		if binary.LittleEndian.Uint32(f) != uint32(c.frameSize-4) || f[5] != 0 || // length, flags
			int64(binary.LittleEndian.Uint64(f[24:])) != s.stamp || digest(f[wire.HeaderSize:]) != s.digest {
			c.corruptAnswer(frameHeader(f), f[wire.HeaderSize:], s)
			c.close(s)
			return s, settledCorrupt
		}
		c.acct.Echoed++
		c.close(s)
		return s, settledEcho
	case kind == wire.KindReject:
		if token == 0 && l.overSize && c.kind != kindControl {
			// The refusal of the over-size fault's header (token 0, never
			// ours; a reference reactor answers with a zero header, since
			// it refuses the frame before reading its fields).
			c.overSizeRejected++
			return nil, 0
		}
		if token != c.token {
			c.foreign(frameHeader(f))
			return nil, 0
		}
		s := c.lookup(kind, seq)
		if s == nil {
			return nil, 0
		}
		c.acct.Rejected++
		c.close(s)
		return s, settledReject
	case c == l.stopConn && (kind == wire.KindStopAck || kind == wire.KindStop) && token == c.token && seq == stopSeq:
		l.onStopAnswer(frameHeader(f), f[wire.HeaderSize:], l.now)
		return nil, 0
	}
	h := frameHeader(f)
	c.acct.Unexpected++
	c.addEvidence("unexpected %v frame (token %#x, seq %d, %d payload bytes) on a %v connection", h.Kind, h.Token, h.Seq, h.PayloadLen(), c.frameKind)
	return nil, 0
}

// lookup returns the live, sent slot an answer with c's token is for, or
// nil after counting the answer as duplicated or unexpected.
func (c *conn) lookup(kind wire.Kind, seq uint64) *slot {
	if seq >= c.nextSeq {
		c.acct.Unexpected++
		c.addEvidence("%v answer for seq %d, never sent on this connection (next seq %d)", kind, seq, c.nextSeq)
		return nil
	}
	s := &c.ring[seq&c.mask]
	if c.nextSeq-seq > uint64(len(c.ring)) || s.seq != seq || s.state == slotDone || s.state == slotFree {
		// The slot was reused or settled: the frame was answered already.
		c.acct.Duplicated++
		c.addEvidence("second %v answer for seq %d", kind, seq)
		return nil
	}
	if s.state == slotBuilt {
		c.acct.Unexpected++
		c.addEvidence("%v answer for seq %d before it was written in full", kind, seq)
		return nil
	}
	return s
}

// close settles s.
func (c *conn) close(s *slot) {
	s.state = slotDone
	c.live--
	for c.lowSeq < c.nextSeq && c.ring[c.lowSeq&c.mask].state == slotDone {
		c.lowSeq++
	}
}

func (c *conn) corruptAnswer(h wire.Header, p []byte, s *slot) {
	c.acct.CorruptedAnswers++
	switch {
	case h.Length != uint32(c.frameSize-4):
		c.addEvidence("seq %d answered with length %d, sent %d", h.Seq, h.Length, c.frameSize-4)
	case h.Flags != 0:
		c.addEvidence("seq %d answered with flags %#x, sent 0", h.Seq, h.Flags)
	case int64(h.SendNs) != s.stamp:
		c.addEvidence("seq %d answered with send ns %d, sent %d", h.Seq, h.SendNs, s.stamp)
	default:
		want := make([]byte, len(p))
		wire.FillPattern(want, c.token, h.Seq)
		at := 0
		for at < len(p) && p[at] == want[at] {
			at++
		}
		c.addEvidence("seq %d payload differs from the pattern at byte %d", h.Seq, at)
	}
}

// foreign handles a frame carrying a token other than the connection's.
func (c *conn) foreign(h wire.Header) {
	if o := c.l.owner(h.Token); o != nil {
		c.acct.WrongConn++
		whose := o.name
		if o == c {
			whose = c.name + "'s earlier connection"
		}
		c.addEvidence("%v seq %d of %s (token %#x) delivered on %s (token %#x)", h.Kind, h.Seq, whose, h.Token, c.name, c.token)
		return
	}
	c.acct.Unexpected++
	c.addEvidence("%v seq %d with token %#x, not one of ours", h.Kind, h.Seq, h.Token)
}
