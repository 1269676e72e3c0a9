//go:build linux

package loadgen_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/wire"
)

// scripted is a fake reactor: it echoes DATA and PING, answers STOP with a
// STOP_ACK whose ledger claims extra more DATA frames accepted (and
// completed) than it answered, answers no DATA after STOP, and closes a
// connection once it has answered closeAfter frames of kind closeKind
// (closeAfter 0: never).
type scripted struct {
	extra      uint64
	closeKind  wire.Kind
	closeAfter int

	mu       sync.Mutex // serialises answers, so answered is what was written
	answered uint64     // DATA frames echoed
	stopped  bool
}

func startScripted(t *testing.T, s *scripted) string {
	return serveEach(t, s.serve)
}

func (s *scripted) serve(c net.Conn) {
	defer c.Close()
	dec := wire.NewDecoder(0)
	buf := make([]byte, 64<<10)
	n := 0 // frames of closeKind answered on c
	for {
		k, err := c.Read(buf)
		if err != nil {
			return
		}
		dec.Write(buf[:k])
		for {
			h, p, ok, err := dec.Next()
			if err != nil || !ok {
				break
			}
			s.mu.Lock()
			var out []byte
			switch h.Kind {
			case wire.KindData:
				if !s.stopped {
					out = wire.AppendFrame(nil, h.Kind, h.Flags, h.Token, h.Seq, h.SendNs, p)
					s.answered++
				}
			case wire.KindPing:
				out = wire.AppendFrame(nil, h.Kind, h.Flags, h.Token, h.Seq, h.SendNs, p)
			case wire.KindStop:
				s.stopped = true
				led := wire.Ledger{Accepted: s.answered + s.extra, Completed: s.answered + s.extra}
				out = wire.AppendFrame(nil, wire.KindStopAck, 0, h.Token, h.Seq, h.SendNs, wire.EncodeLedger(led))
			}
			if out != nil {
				c.Write(out)
			}
			s.mu.Unlock()
			if out != nil && h.Kind == s.closeKind {
				if n++; n == s.closeAfter {
					return
				}
			}
		}
	}
}

// TestStopNeedsAck: a STOP merely sent excuses nothing. A byte echo sends
// STOP back; a frame it drops afterwards is lost, and the run invalid.
func TestStopNeedsAck(t *testing.T) {
	t.Parallel()
	f := startFake(t, func(conn, n int, h wire.Header, frame []byte) []fakeWrite {
		if conn == 0 && n == theFrame {
			return nil
		}
		return []fakeWrite{{conn, frame}}
	})
	res, err := loadgen.Run(context.Background(), loadgen.Config{DataAddr: f.Addr(), Steady: 2, Rate: 2000,
		Duration: 300 * time.Millisecond, StopAt: 20 * time.Millisecond, Drain: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop == nil || res.Stop.Status != "not acknowledged: echoed" {
		t.Fatalf("stop outcome %+v", res.Stop)
	}
	if res.Valid || res.Totals.Lost != 1 || res.Totals.Unanswered != 0 {
		t.Errorf("valid %v %q, totals %+v: want invalid, 1 lost", res.Valid, res.Invalid, res.Totals)
	}
}

// TestStopLedgerMatchesAnswers: after an acknowledged STOP, with no wire
// fault, the ledger's accepted count must equal the DATA frames we saw
// answered; a reactor that counts a frame it never sent back is caught.
func TestStopLedgerMatchesAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		extra uint64
		valid bool
	}{{0, true}, {1, false}} {
		addr := startScripted(t, &scripted{extra: tc.extra})
		res, err := loadgen.Run(context.Background(), loadgen.Config{DataAddr: addr, Steady: 2, Rate: 2000,
			Duration: time.Second, StopAt: 100 * time.Millisecond, Drain: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if st := res.Stop; st == nil || st.Status != "acknowledged" || st.Ledger == nil || !st.Balanced {
			t.Fatalf("extra %d: stop outcome %+v", tc.extra, res.Stop)
		}
		if res.Valid != tc.valid || res.Totals.Lost != 0 {
			t.Errorf("extra %d: valid %v %q, totals %+v; want valid %v, nothing lost", tc.extra, res.Valid, res.Invalid, res.Totals, tc.valid)
		}
		if !tc.valid && !strings.Contains(strings.Join(res.Invalid, "\n"), "ledger accepted") {
			t.Errorf("extra %d: invalid reasons %q do not name the ledger", tc.extra, res.Invalid)
		}
	}
}

// TestTargetClosesMidRun: a target that closes a data or a control
// connection while the run is sending shortens the run; that makes it
// invalid, naming the connection and when, though nothing was outstanding.
func TestTargetClosesMidRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind  wire.Kind
		after int
		conn  string
	}{{wire.KindData, 20, "steady-0"}, {wire.KindPing, 5, "control-0"}} {
		t.Run(tc.conn, func(t *testing.T) {
			t.Parallel()
			addr := startScripted(t, &scripted{closeKind: tc.kind, closeAfter: tc.after})
			res, err := loadgen.Run(context.Background(), loadgen.Config{DataAddr: addr, Steady: 1, Rate: 100,
				ControlEvery: 10 * time.Millisecond, Duration: 500 * time.Millisecond, Drain: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			why := strings.Join(res.Invalid, "\n")
			if res.Valid || !strings.Contains(why, tc.conn) || !strings.Contains(why, "while sending") {
				t.Errorf("valid %v %q, totals %+v: want invalid, naming %s", res.Valid, res.Invalid, res.Totals, tc.conn)
			}
		})
	}
}
