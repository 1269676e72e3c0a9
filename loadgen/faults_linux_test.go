//go:build linux

package loadgen_test

import (
	"context"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
)

// TestWireFaultsLT plays every wire fault on the data connections of a run
// against lt and checks that every frame is still accounted for: shaping
// faults lose and abandon nothing; connection faults reconnect with new
// tokens and only abandon what was outstanding when they closed; nothing
// is lost, duplicated, corrupted or misdelivered.
func TestWireFaultsLT(t *testing.T) {
	r := startReactor(t, reactors.LT)
	cases := []struct {
		spec       string
		hot        bool // also a hot source (faults that do not churn connections)
		reconnects bool // the fault ends connections
		abandons   bool // frames are expected to be abandoned
	}{
		{spec: "half-packets", hot: true},
		{spec: "half-packets:every=7,delay=200us", hot: true},
		{spec: "coalesced:frames=3", hot: true},
		{spec: "slow-consumer:after=2,pause=20ms", hot: true},
		{spec: "fd-reuse-churn", reconnects: true, abandons: true},
		{spec: "fd-reuse-churn:every=2,reset=true", reconnects: true, abandons: true},
		{spec: "reset:after=1", reconnects: true, abandons: true},
		{spec: "half-close", reconnects: true},
		{spec: "over-size", reconnects: true},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			// -short plays each fault once, in the form whose steps cover
			// the other's: half-packets with a delay (its writes and the
			// sleeps between them), fd-reuse-churn plain (its reset is the
			// same step as reset:after=1's, and TestConnectionFaultsByteEcho
			// plays the churn with it).
			if testing.Short() && (tc.spec == "half-packets" || tc.spec == "fd-reuse-churn:every=2,reset=true") {
				t.Skip("-short: the fault runs in its other form")
			}
			t.Parallel()
			cfg := loadgen.Config{DataAddr: r.Data, ControlAddr: r.Control, Steady: 1, Rate: 500,
				ControlEvery: 10 * time.Millisecond, Duration: 300 * time.Millisecond, Drain: 300 * time.Millisecond,
				Faults: []string{tc.spec}}
			if tc.hot {
				cfg.Hot, cfg.InFlight = 1, 4
			}
			res, err := loadgen.Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			tot := res.Totals
			if !res.Valid || tot.Lost+tot.Duplicated+tot.CorruptedAnswers+tot.Unexpected+tot.WrongConn != 0 {
				t.Fatalf("invalid %q; totals %+v", res.Invalid, tot)
			}
			if tot.Sent == 0 || tot.Sent != tot.Echoed+tot.Rejected+tot.Abandoned+tot.Unanswered {
				t.Errorf("unbalanced totals %+v", tot)
			}
			if (tot.Abandoned > 0) != tc.abandons {
				t.Errorf("abandoned %d: want abandoned frames = %v", tot.Abandoned, tc.abandons)
			}
			for _, c := range res.Conns {
				switch {
				case c.Kind == "control":
					if c.Connections != 1 || c.Lost != 0 || c.Echoed == 0 {
						t.Errorf("%s: control connections must not be faulted: %+v", c.Name, c)
					}
				case tc.reconnects && c.Connections < 2:
					t.Errorf("%s: %d connection(s), want reconnections", c.Name, c.Connections)
				case !tc.reconnects && c.Connections != 1:
					t.Errorf("%s: %d connections for a shaping fault", c.Name, c.Connections)
				}
				if c.ConnectErrors > 0 {
					t.Logf("%s: %d connect errors: %q", c.Name, c.ConnectErrors, c.Evidence)
				}
			}
			if tc.spec == "over-size" && res.Conns[0].OverSizeRejected == 0 {
				t.Errorf("no REJECT of the over-size header: %+v", res.Conns[0])
			}
			t.Logf("%+v; steady: %d connections", tot, res.Conns[0].Connections)
		})
	}
}

// TestConnectionFaultsByteEcho plays the faults that end connections
// against a plain byte echo (a black box): the over-size header comes back
// and ends the answer stream, which is expected after that fault; after a
// half-close everything is answered before the echo closes.
func TestConnectionFaultsByteEcho(t *testing.T) {
	addr := startByteEcho(t)
	for _, spec := range []string{"over-size", "half-close", "fd-reuse-churn:reset=true"} {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			res, err := loadgen.Run(context.Background(), loadgen.Config{DataAddr: addr, Steady: 2, Rate: 1000,
				Duration: 200 * time.Millisecond, Drain: 300 * time.Millisecond, Faults: []string{spec}})
			if err != nil {
				t.Fatal(err)
			}
			tot := res.Totals
			if !res.Valid || tot.Sent == 0 || tot.Sent != tot.Echoed+tot.Abandoned {
				t.Fatalf("invalid %q, totals %+v, connections %+v", res.Invalid, tot, res.Conns)
			}
			for _, c := range res.Conns {
				if c.Connections < 2 {
					t.Errorf("%s: %d connection(s), want reconnections", c.Name, c.Connections)
				}
			}
		})
	}
}
