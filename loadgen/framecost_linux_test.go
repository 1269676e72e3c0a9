//go:build linux

package loadgen

import (
	"fmt"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/results/record"
	"golang.org/x/sys/unix"
)

// BenchmarkFrameCost is the generator's own work per frame on a hot source,
// without the network: every iteration hands the connection the echo of
// its K frames in flight, as one read, and lets it check them, record their
// latencies and build and write K new ones (to /dev/null: one write
// syscall per batch). ns/frame is the user-space cost BenchmarkCapacity's
// hot cells pay per frame on top of the socket calls.
func BenchmarkFrameCost(b *testing.B) {
	for _, k := range []int{16, 256} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			c, done := benchConn(b, k)
			defer done()
			echo := make([]byte, k*c.frameSize)
			for b.Loop() {
				copy(echo, c.out[:len(echo)]) // the batch just written: c.out keeps its bytes
				c.l.now += 1000
				c.onAnswers(echo, c.l.now)
			}
			if c.acct.Echoed != uint64(b.N*k) || c.acct.CorruptedAnswers+c.acct.Unexpected+c.acct.Duplicated != 0 {
				b.Fatalf("accounting %+v after %d rounds of %d", c.acct, b.N, k)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*k), "ns/frame")
		})
	}
}

// benchConn returns a hot source with k frames in flight, written to
// /dev/null.
func benchConn(b *testing.B, k int) (*conn, func()) {
	c, done := devNullConn(b, Config{DataAddr: "127.0.0.1:1", Hot: 1, InFlight: k, Duration: time.Hour})
	c.refill()
	if c.live != k || c.sentSeq != uint64(k) {
		b.Fatalf("after the first refill: %d live, %d sent", c.live, c.sentSeq)
	}
	return c, done
}

// devNullConn returns the first source of cfg (one source only) in a loop
// of its own that is sending from time 0 until cfg.Duration, at the loop's
// send grain (see sendGrain), its recorder and classes in place, its
// connection /dev/null: every write goes through in full, nothing is read.
// The caller moves the loop's clock (l.now) and hands the source its
// answers (onAnswers). The second result closes the loop.
func devNullConn(tb testing.TB, cfg Config) (*conn, func()) {
	tb.Helper()
	cfg = cfg.WithDefaults()
	sa := &unix.SockaddrInet4{Port: 1, Addr: [4]byte{127, 0, 0, 1}}
	l, err := newLoop(cfg, nil, sa, sa)
	if err != nil {
		tb.Fatal(err)
	}
	l.rec = record.NewRecorder(time.Now(), time.Second, 0)
	for _, p := range []struct {
		c    **record.Class
		name string
	}{{&l.cData, ClassData}, {&l.cRaw, ClassDataUncorrected}, {&l.cControl, ClassControl}, {&l.cStop, ClassStop}, {&l.cLag, ClassSendLag}} {
		*p.c, _ = l.rec.Class(p.name)
	}
	l.openSampleLogs()
	if cfg.Rate*sendGrain.Seconds() > 1 {
		l.grain = int64(sendGrain) // as loop.run sets it
	}
	l.measureFrom, l.sendEnd, l.phase = 0, int64(cfg.Duration), phaseSending
	c := l.conns[0]
	c.service, _ = l.rec.Class(ClassServicePrefix + c.name)
	if c.fd, err = unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0); err != nil {
		l.closeAll()
		tb.Fatal(err)
	}
	c.token = l.newToken(c)
	c.state, c.inEpoll, c.interest = stOpen, true, unix.EPOLLIN // /dev/null cannot be in an epoll set: pretend
	if c.kind != kindHot {
		c.endSeq = c.firstFrom(l.sendEnd) // as start does, without sending
	}
	c.started = true
	return c, l.closeAll
}
