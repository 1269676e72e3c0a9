package cases

import (
	"errors"
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/faults"
)

// w3Case is W3: echoes whose writes come back short are delivered intact
// and in order.
func w3Case() conformance.Case {
	return conformance.Case{
		ID:    "W3",
		Title: "short writes of large echoes",
		Claim: fmt.Sprintf("%d echoes of %d KiB (%d MiB, more than the socket buffers of both ends hold) to a client that pauses reading for %v, and %d small echoes of 1 to %d bytes, half before and half after the large ones, sent in groups of %d a millisecond apart, to a client with a %d KiB receive buffer (so that the server's writes of small pieces come back short too), are delivered intact and in order, though the server's writes come back short",
			w3Big, w3BigSize>>10, w3Big*w3BigSize>>20, w3Pause, w3Small, w3SmallMax, w3Group, smallClientBuf>>10),
		WireFaults: []string{"slow-consumer"},
		Bound:      fmt.Sprintf("every echo within %v (%d MiB over loopback takes tens of milliseconds once the client reads)", w3Bound, w3Big*w3BigSize>>20),
		Timeout:    40 * time.Second,
		Run:        runW3,
	}
}

// W3's stream: half of w3Small small frames of uneven sizes, w3Big large
// frames, then the other half, the small ones sent in groups of w3Group
// with a pause between groups, so that a server reads them in small
// pieces: the first half while the client does not read yet, the second
// once its output has backed up behind the large echoes. The client's
// receive buffer is small (dialNarrow), so the server's writes come back
// short whenever the client falls behind, the small pieces' too. A server
// whose writes of one piece can interleave with another's (overlapping
// asynchronous writes, common and forbidden in Asio) reorders bytes where
// a short write splits a piece, and small pieces are many.
const (
	w3Big, w3BigSize = 32, 512 << 10
	w3Small          = 512
	w3SmallMax       = 3999
	w3Group          = 8
	// The client stops reading for w3Pause first; every echo is due
	// within w3Bound.
	w3Pause = 500 * time.Millisecond
	w3Bound = 20 * time.Second
)

// w3SmallSize is the payload size of W3's small frame i: 1 to w3SmallMax
// bytes, spread so that no two neighbours are alike.
func w3SmallSize(i int) int { return 1 + (i*997+13)%w3SmallMax }

func runW3(c *conformance.C) {
	p := dialNarrowRecorded(c, "conn 1", c.Instance().Addr())
	var plan []faults.Step
	var sizes []int
	var sent []byte // the stream, as the echo must return it
	data := func(size int) {
		f := dataFrame(1, uint64(len(sizes)), size)
		plan = append(plan, faults.Writes(f)...)
		sent = append(sent, f...)
		sizes = append(sizes, size)
	}
	small := func(from, to int) {
		for i := from; i < to; i++ {
			if i%w3Group == 0 {
				// The client stops reading for a moment: the server's
				// output backs up, and its next writes come back short.
				plan = append(plan, faults.Step{Op: faults.OpPauseReading, For: 2 * time.Millisecond}, faults.Step{Op: faults.OpSleep, For: time.Millisecond})
			}
			data(w3SmallSize(i))
		}
	}
	small(0, w3Small/2)
	for range w3Big {
		data(w3BigSize)
	}
	small(w3Small/2, w3Small)
	plan = faults.SlowConsumer{After: 0, Pause: w3Pause}.Apply(plan)
	errc := playAsync(c, p, plan)
	deadline := time.Now().Add(w3Bound)
	for i, sz := range sizes {
		g, err := p.next(time.Until(deadline))
		why := ""
		if err != nil {
			c.Evidencef("%s: waiting for the echo of DATA token 1 seq %d (%d B) for %v: %v", p.name, i, sz, w3Bound, err)
			why = err.Error()
		} else if why = checkEcho(g, 1, uint64(i), sz); why != "" {
			c.Evidencef("%s: sent DATA token 1 seq %d len %d; got %s", p.name, i, sz, g)
		}
		if why != "" {
			w3Account(c, p, sent, errc, fmt.Sprintf("%s: echo of seq %d: %s", p.name, i, why))
		}
	}
	if err := <-errc; err != nil {
		c.Fatalf("sending: %v", err)
	}
}

// w3Settle is how long the stream must stay quiet, the sending done, for
// W3 to count what came back; w3SettleMax bounds the wait for that.
const (
	w3Settle    = 500 * time.Millisecond
	w3SettleMax = 10 * time.Second
)

// w3Account ends W3 on an echo that went wrong (frame says how): it lets
// the sending finish and the stream settle, reading on, then compares
// the bytes the connection got back with the bytes sent on it
// (accountStream), and fails with what that shows. It names bytes
// dropped only on two signals (streamAccount.dropped); otherwise it
// describes the bytes as they came, beside the frame's symptom.
func w3Account(c *conformance.C, p *peer, sent []byte, errc <-chan error, frame string) {
	until := time.Now().Add(w3SettleMax)
	var sendErr error
	sending := true
	for time.Now().Before(until) {
		if sending {
			select {
			case sendErr = <-errc:
				sending = false
			default:
			}
		}
		// Frames after the bad one are read and set aside, so the reader
		// goes on reading; once it has stopped decoding (frames closed),
		// it records the rest by itself and there is nothing to wait on
		// but the clock.
		if _, err := p.next(50 * time.Millisecond); err != nil && !errors.Is(err, errNoAnswer) {
			time.Sleep(50 * time.Millisecond)
		}
		if !sending && time.Since(p.raw.lastAt()) >= w3Settle {
			break
		}
	}
	got := p.raw.all()
	switch {
	case sending:
		c.Evidencef("the client was still sending %v after the bad echo: the stream was compared as it was", w3SettleMax)
	case sendErr != nil:
		c.Evidencef("sending ended with %v: fewer bytes than the stream's %d may have gone out", sendErr, len(sent))
	}
	a := accountStream(sent, got)
	c.Evidencef("%s: %s", p.name, a)
	if a.dropped() && !sending && sendErr == nil {
		c.Fatalf("%s: %s (first seen as %s)", p.name, a, frame)
	}
	c.Fatalf("%s (%s)", frame, a)
}
