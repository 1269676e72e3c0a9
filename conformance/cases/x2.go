package cases

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/reactors"

	"github.com/reactorlab/reactorlab/wire"
)

// x2Case is X2: DATA frames behind a STOP are refused with REJECT, and the
// STOP_ACK ledger balances.
func x2Case() conformance.Case {
	return conformance.Case{
		ID:    "X2",
		Title: "stop ledger balances, post-STOP requests refused",
		Claim: "DATA frames behind a STOP are refused with REJECT, the STOP_ACK ledger balances (accepted = completed + rejected), and a data connection pipelining through the stop sees only in-order echoes, then only REJECTs, then the end",
		Bound: fmt.Sprintf("STOP_ACK within %v, the REJECTs of the frames behind it each within %v of the one before; each answer on the data connection after the STOP, and its end, within %v of the one before (a reference reactor's stop grace is %v)", x2AckBound, x2AckBound, x2AnswerBound, reactors.DefaultConfig().StopGrace),
		Needs: conformance.NeedControl | conformance.NeedStats,
		Run:   runX2,
	}
}

// X2's client waits x2AckBound for the STOP_ACK and for each REJECT of
// the frames behind the STOP, and x2AnswerBound for each answer, or the
// end, on the data connection.
const (
	x2AckBound    = 5 * time.Second
	x2AnswerBound = 10 * time.Second
)

func runX2(c *conformance.C) {
	inst := c.Instance()
	data := dial(c, "data conn", inst.Addr())
	ctl := dial(c, "control conn", inst.ControlAddr())
	pipelineData(c, data)
	// Let the pipeline fill, then STOP with three DATA frames behind it.
	if _, err := data.next(echoBound); err != nil {
		c.Fatalf("data connection: first echo: %v", err)
	}
	behind := [][]byte{dataFrame(77, 0, 10), dataFrame(77, 1, 10), dataFrame(77, 2, 10)}
	sendStop(c, ctl, behind...)
	ledger, before := awaitAck(c, ctl, x2AckBound)
	c.Evidencef("control connection: sent STOP + DATA token 77 seq 0..2 in one write; got %v, then STOP_ACK %+v", before, ledger)
	if !ledger.Balanced() {
		c.Errorf("STOP_ACK ledger does not balance: accepted %d ≠ completed %d + rejected %d", ledger.Accepted, ledger.Completed, ledger.Rejected)
	}
	rejected := rejectsBehindStop(c, ctl, before)
	echoes, rejects := dataAfterStop(c, data)
	c.Evidencef("data connection: %d echoes then %d REJECTs", echoes+1, rejects)
	f := c.Stop()
	if f.Stats != nil {
		l := f.Stats.Ledger
		c.Evidencef("final ledger: %+v", l)
		if !l.Balanced() {
			c.Errorf("final ledger does not balance: %+v", l)
		}
		if seen := uint64(echoes + 1 + rejects + rejected); l.Accepted < seen {
			c.Errorf("final ledger accepted %d frames, but clients saw %d answers", l.Accepted, seen)
		}
	}
}

// pipelineData makes data pipeline 1 KiB frames (token 1, seq from 0)
// until the server stops taking them; the writer is stopped and waited
// for when the case ends (a blocked write gives up after its 1 s
// deadline).
func pipelineData(c *conformance.C, data *peer) {
	stopWriting, writerDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(writerDone)
		seq := uint64(0)
		for {
			select {
			case <-stopWriting:
				return
			default:
			}
			var b []byte
			for i := 0; i < 16; i++ {
				b = append(b, dataFrame(1, seq, 1024)...)
				seq++
			}
			data.link.Conn().SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := data.link.Write(b); err != nil {
				return
			}
		}
	}()
	c.Cleanup(func() { close(stopWriting); <-writerDone })
}

// rejectsBehindStop counts the REJECTs of the three DATA frames (token
// 77) sent behind STOP on ctl: among before, what came before the
// STOP_ACK, or after it, before the end. All three must be refused.
func rejectsBehindStop(c *conformance.C, ctl *peer, before []got) int {
	rejected := map[uint64]bool{}
	for _, g := range before {
		if g.h.Kind == wire.KindReject && g.h.Token == 77 {
			rejected[g.h.Seq] = true
		}
	}
	// They may also follow the STOP_ACK, before the end.
	for len(rejected) < 3 {
		g, err := ctl.next(x2AckBound)
		if err != nil {
			break
		}
		if g.h.Kind == wire.KindReject && g.h.Token == 77 {
			rejected[g.h.Seq] = true
		}
	}
	if len(rejected) != 3 {
		c.Errorf("DATA frames behind STOP: %d of 3 refused with REJECT (silently dropped)", len(rejected))
	}
	return len(rejected)
}

// dataAfterStop reads the data connection's answers after its first to
// the end: echoes in order, then only REJECTs. It returns how many of
// each it read.
func dataAfterStop(c *conformance.C, data *peer) (echoes, rejects int) {
	next := uint64(1) // seq 0 was read before
	for {
		g, err := data.next(x2AnswerBound)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, errNoAnswer) {
				c.Logf("data connection ended with %v", err)
			}
			if errors.Is(err, errNoAnswer) {
				c.Errorf("data connection neither answered nor closed for %v after STOP", x2AnswerBound)
			}
			break
		}
		switch {
		case g.h.Seq != next:
			c.Errorf("data connection: answer for seq %d, want %d (%s)", g.h.Seq, next, g)
		case g.h.Kind == wire.KindReject:
			rejects++
		case rejects > 0:
			c.Errorf("data connection: echo of seq %d after a REJECT: admission reopened", g.h.Seq)
		default:
			if why := checkEcho(g, 1, g.h.Seq, 1024); why != "" {
				c.Errorf("data connection: seq %d: %s", g.h.Seq, why)
			}
			echoes++
		}
		if c.Failed() {
			break
		}
		next++
	}
	return echoes, rejects
}
