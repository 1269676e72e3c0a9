package cases

import (
	"bytes"
	"fmt"
)

// streamAccount compares the bytes a byte echo sent back on one
// connection with the bytes sent to it, whole streams, offsets counted
// from the first byte.
type streamAccount struct {
	sent, got int
	// prefix is how many bytes got and sent have in common from the
	// start.
	prefix int
	// Where got goes on past prefix with bytes of sent from further on
	// (a run of at least gapMatch bytes), missing is
	// how many bytes of sent it skipped there and resumed how many bytes
	// after the gap match sent from prefix + missing on; both 0 otherwise.
	missing, resumed int
	// gaps and gapBytes walk all of got as runs of sent in order, each
	// resuming further on: the gaps found and the bytes they skipped.
	// explained is whether that walk reached the end of got (every byte
	// received is a byte sent, in order, with only bytes missing between).
	gaps, gapBytes int
	explained      bool
}

// gapMatch is how many bytes after a gap must match the stream further on
// for the gap to count as bytes missing: the echoed pattern (a frame's
// header, or a payload's xorshift bytes) repeats no run this long by
// chance.
const gapMatch = 32

// accountStream compares got with sent (streamAccount).
func accountStream(sent, got []byte) streamAccount {
	a := streamAccount{sent: len(sent), got: len(got)}
	a.prefix = commonPrefix(sent, got)
	if a.prefix == len(got) {
		a.explained = true
		return a
	}
	g, s := a.prefix, a.prefix
	for g < len(got) {
		skip, run := resume(sent[s:], got[g:])
		if run == 0 {
			return a // got[g] is no byte of sent further on: not explained
		}
		if a.gaps == 0 {
			a.missing, a.resumed = skip, run
		}
		a.gaps++
		a.gapBytes += skip
		g, s = g+run, s+skip+run // run is maximal: got[g] differs from sent[s]
	}
	a.explained = true
	return a
}

// resume finds where rest (bytes received after a mismatch) goes on in
// stream (the bytes sent from the mismatch on): the bytes skipped, and
// how many match from there. It needs gapMatch bytes of rest to match;
// run is 0 when rest is shorter, or its first gapMatch bytes are nowhere
// in stream past its first byte.
func resume(stream, rest []byte) (skip, run int) {
	if len(rest) < gapMatch || len(stream) < 1 {
		return 0, 0
	}
	i := bytes.Index(stream[1:], rest[:gapMatch])
	if i < 0 {
		return 0, 0
	}
	skip = i + 1
	return skip, commonPrefix(stream[skip:], rest)
}

// commonPrefix is how many bytes a and b have in common from the start.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// dropped reports whether the account shows bytes dropped from the
// stream, on two signals: fewer bytes received than sent, and the bytes
// after the first difference matching the stream sent further on.
func (a streamAccount) dropped() bool {
	return a.got < a.sent && a.missing > 0 && a.resumed >= gapMatch
}

// String says what the account shows, naming a cause only on two
// signals (dropped).
func (a streamAccount) String() string {
	switch {
	case a.got == a.sent && a.prefix == a.got:
		return fmt.Sprintf("all %d bytes sent came back, in order", a.sent)
	case a.prefix == a.got:
		return fmt.Sprintf("%d bytes missing after offset %d: received %d of %d bytes sent, the stream's first in order, and none after them", a.sent-a.got, a.got, a.got, a.sent)
	case a.dropped():
		s := fmt.Sprintf("%d bytes missing after offset %d (the server dropped the unwritten rest of a write?): received %d of %d bytes sent; the %d bytes after the gap are the stream from offset %d on",
			a.missing, a.prefix, a.got, a.sent, a.resumed, a.prefix+a.missing)
		if a.explained {
			s += fmt.Sprintf("; all that came back is the stream in order with %d gap(s), %d bytes missing in all", a.gaps, a.sent-a.got)
		}
		return s
	case a.got > a.sent:
		return fmt.Sprintf("received %d bytes, more than the %d sent; the first %d match", a.got, a.sent, a.prefix)
	default:
		return fmt.Sprintf("received %d of %d bytes sent; they match the stream sent up to offset %d, and differ there", a.got, a.sent, a.prefix)
	}
}
