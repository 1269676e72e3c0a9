//go:build linux

package loadgen_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/wire"
)

// theFrame is the frame of each connection the mutators below tamper with.
const theFrame = 100

// TestAccountingDetects runs two steady sources against fake targets that
// each mishandle one frame per connection in one way, and checks that the
// accounting names exactly that, that the totals balance, and that the run
// is invalid for every category but rejection: with one loop, and with
// each connection on a loop of its own (whose ledgers the run merges).
// With -short each case runs once, on one loop or two in turn: a case's
// detection is the same per-connection code on either, and both the
// single ledger and the merge still run.
//
// The frames reach the accounting through either engine's reads and
// writes, so every case also runs on the uring engine (where the kernel
// has it), once, on the number of loops -short gives it; with -short the
// cases take turns on the engines too, so that each still runs once.
func TestAccountingDetects(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		for _, loops := range []int{1, 2} {
			for i, tc := range accountingCases() {
				t.Run(fmt.Sprintf("%s/%s/loops=%d", engine, tc.name, loops), func(t *testing.T) {
					turnLoops, turnEngine := 1+i%2, engines[i/2%2]
					switch {
					case testing.Short() && (loops != turnLoops || engine != turnEngine):
						t.Skipf("-short: %s runs on %d loop(s), engine %s, only", tc.name, turnLoops, turnEngine)
					case engine != loadgen.EngineEpoll && loops != turnLoops:
						t.Skipf("%s runs on the %s engine on %d loop(s) only", tc.name, engine, turnLoops)
					}
					needEngine(t, engine)
					t.Parallel()
					f := startFake(t, tc.mutate)
					res, err := loadgen.Run(context.Background(), loadgen.Config{DataAddr: f.Addr(), Steady: 2, Rate: 2000, Loops: loops,
						Duration: 300 * time.Millisecond, Drain: 200 * time.Millisecond, Engine: engine})
					if err != nil {
						t.Fatal(err)
					}
					if res.SelfCheck.Engine != engine {
						t.Errorf("self-check says engine %q ran, want %q", res.SelfCheck.Engine, engine)
					}
					checkAccountingCase(t, tc, res)
				})
			}
		}
	}
}

// accountingCase is one way of mishandling frames, and what the accounting
// must say of it.
type accountingCase struct {
	name    string
	mutate  mutator
	want    loadgen.Accounting // of the two connections together, Sent and Echoed excepted
	valid   bool
	explain string // in the invalid reason
}

// onConn0 is a mutator that hands frame theFrame of connection 0 to f and
// echoes every other frame.
func onConn0(f func(h wire.Header, frame []byte) []fakeWrite) mutator {
	return func(conn, n int, h wire.Header, frame []byte) []fakeWrite {
		if conn == 0 && n == theFrame {
			return f(h, frame)
		}
		return []fakeWrite{{conn, frame}}
	}
}

// accountingCases are TestAccountingDetects's cases, one category each.
func accountingCases() []accountingCase {
	return []accountingCase{
		{"drop", onConn0(func(wire.Header, []byte) []fakeWrite { return nil }),
			loadgen.Accounting{Lost: 1}, false, "1 lost"},
		{"corrupt-payload", onConn0(func(_ wire.Header, f []byte) []fakeWrite { f[wire.HeaderSize+7] ^= 0x40; return []fakeWrite{{0, f}} }),
			loadgen.Accounting{CorruptedAnswers: 1}, false, "payload differs from the pattern at byte 7"},
		{"corrupt-header", onConn0(func(_ wire.Header, f []byte) []fakeWrite { f[24]++; return []fakeWrite{{0, f}} }),
			loadgen.Accounting{CorruptedAnswers: 1}, false, "send ns"},
		{"unexpected-seq", onConn0(func(h wire.Header, f []byte) []fakeWrite {
			stray := wire.AppendFrame(nil, h.Kind, h.Flags, h.Token, h.Seq+1<<40, h.SendNs, f[wire.HeaderSize:])
			return []fakeWrite{{0, f}, {0, stray}} // the echo, then a frame answering nothing
		}), loadgen.Accounting{Unexpected: 1}, false, "1 unexpected frames received"},
		{"unexpected-token", onConn0(func(h wire.Header, f []byte) []fakeWrite {
			stray := wire.AppendFrame(nil, h.Kind, h.Flags, 42, h.Seq, h.SendNs, f[wire.HeaderSize:])
			return []fakeWrite{{0, f}, {0, stray}}
		}), loadgen.Accounting{Unexpected: 1}, false, "with token 0x2a, not one of ours"},
		{"duplicate", onConn0(func(_ wire.Header, f []byte) []fakeWrite { return []fakeWrite{{0, f}, {0, f}} }),
			loadgen.Accounting{Duplicated: 1}, false, "1 duplicated"},
		{"reject", onConn0(func(h wire.Header, _ []byte) []fakeWrite {
			return []fakeWrite{{0, wire.AppendFrame(nil, wire.KindReject, 0, h.Token, h.Seq, h.SendNs, []byte("no"))}}
		}), loadgen.Accounting{Rejected: 1}, true, ""},
		{"swap", func(conn, n int, h wire.Header, frame []byte) []fakeWrite {
			if n == theFrame {
				return []fakeWrite{{1 - conn, frame}} // each connection's frame goes to the other
			}
			return []fakeWrite{{conn, frame}}
		}, loadgen.Accounting{WrongConn: 2, Lost: 2}, false, "delivered to the wrong connection"},
	}
}

// checkAccountingCase checks the result of a run against tc's fake target:
// balanced, exactly tc.want besides Sent and Echoed, valid as tc says, and
// an invalid reason that explains and names the connection.
func checkAccountingCase(t *testing.T, tc accountingCase, res *loadgen.Result) {
	t.Helper()
	got := res.Totals
	if got.Sent < 2*theFrame+2 {
		t.Fatalf("sent only %d frames", got.Sent)
	}
	if !got.Balanced() {
		t.Errorf("unbalanced: %+v", got)
	}
	for _, c := range res.Conns {
		if !c.Balanced() {
			t.Errorf("%s unbalanced: %+v", c.Name, c.Accounting)
		}
	}
	got.Sent, got.Echoed = 0, 0
	if got != tc.want {
		t.Errorf("accounting %+v, want %+v", got, tc.want)
	}
	if res.Valid != tc.valid {
		t.Errorf("valid = %v, want %v (invalid: %q)", res.Valid, tc.valid, res.Invalid)
	}
	if !tc.valid && (len(res.Invalid) == 0 || !strings.Contains(strings.Join(res.Invalid, "\n"), tc.explain)) {
		t.Errorf("invalid reasons %q do not say %q", res.Invalid, tc.explain)
	}
	if !tc.valid && len(res.Invalid) > 0 && !strings.Contains(res.Invalid[0], "steady-") {
		t.Errorf("invalid reason %q does not name the connection", res.Invalid[0])
	}
}

// TestStopEchoedByByteEcho: a byte-echo target sends STOP back; that is
// reported, not an error, and the run goes on to its end.
func TestStopEchoedByByteEcho(t *testing.T) {
	t.Parallel()
	f := startFake(t, nil)
	res, err := loadgen.Run(context.Background(), loadgen.Config{DataAddr: f.Addr(), Steady: 1, Rate: 1000,
		Duration: 300 * time.Millisecond, StopAt: 100 * time.Millisecond, Drain: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stop == nil || res.Stop.Status != "not acknowledged: echoed" {
		t.Fatalf("stop outcome %+v", res.Stop)
	}
	if !res.Valid || res.Measured != 300*time.Millisecond {
		t.Fatalf("valid %v %q, measured %v: the run should go on after an echoed STOP", res.Valid, res.Invalid, res.Measured)
	}
}
