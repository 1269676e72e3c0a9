package loadgen

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/reactorlab/reactorlab/wire"
)

// TestSplitterMatchesDecoder: fed a stream cut anywhere, in chunks of any
// size, the splitter returns the frames wire.Decoder returns, in the same
// order, and then the same error (a malformed or an over-size header), for
// good.
func TestSplitterMatchesDecoder(t *testing.T) {
	const limit = 300
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 3000 {
		var stream []byte
		for i := range rng.IntN(12) {
			p := make([]byte, rng.IntN(limit-wire.HeaderSize+1))
			wire.FillPattern(p, 9, uint64(i))
			stream = wire.AppendFrame(stream, wire.Kind(1+rng.IntN(5)), 0, 9, uint64(i), 7, p)
		}
		switch rng.IntN(4) {
		case 0: // an over-size header
			stream = wire.AppendFrame(stream, wire.KindData, 0, 9, 99, 7, make([]byte, limit))
		case 1: // a malformed one (unknown kind), then a good frame
			bad := wire.AppendFrame(nil, wire.KindData, 0, 9, 99, 7, []byte("x"))
			bad[4] = 77
			stream = wire.AppendFrame(append(stream, bad...), wire.KindData, 0, 9, 100, 7, []byte("y"))
		case 2: // an incomplete frame at the end
			stream = append(stream, wire.AppendFrame(nil, wire.KindPing, 0, 9, 101, 7, make([]byte, 40))[:rng.IntN(70)]...)
		}
		seed := rng.Uint64()
		dec := wire.NewDecoder(limit)
		want, wantErr := splitWith(stream, rand.New(rand.NewPCG(seed, 1)), func(chunk []byte, emit func(wire.Header, []byte)) error {
			dec.Write(chunk)
			for {
				h, p, ok, err := dec.Next()
				if !ok {
					return err
				}
				emit(h, p)
			}
		})
		s := splitter{max: limit}
		got, gotErr := splitWith(stream, rand.New(rand.NewPCG(seed, 1)), func(chunk []byte, emit func(wire.Header, []byte)) error {
			buf := bytes.Clone(chunk) // the splitter works in the caller's buffer: reuse it like the loop does
			s.feed(buf)
			defer clear(buf)
			for {
				f, ok, err := s.next()
				if !ok {
					return err
				}
				emit(frameHeader(f), f[wire.HeaderSize:])
			}
		})
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("round %d:\n got %s, %v\nwant %s, %v", round, got, gotErr, want, wantErr)
		}
	}
}

// splitWith feeds stream to feed in chunks of random sizes and returns the
// frames emitted (as text) and the first error.
func splitWith(stream []byte, rng *rand.Rand, feed func(chunk []byte, emit func(wire.Header, []byte)) error) (string, error) {
	var out bytes.Buffer
	emit := func(h wire.Header, p []byte) { fmt.Fprintf(&out, "%+v %x\n", h, p) }
	for len(stream) > 0 {
		n := min(len(stream), 1+rng.IntN(3*wire.HeaderSize))
		if rng.IntN(8) == 0 {
			n = len(stream)
		}
		if err := feed(stream[:n], emit); err != nil {
			// Sticky: the next feed fails the same way, emitting nothing.
			before := out.Len()
			if err2 := feed(stream[n:], emit); fmt.Sprint(err2) != fmt.Sprint(err) || out.Len() != before {
				return out.String(), fmt.Errorf("not sticky: %v then %v", err, err2)
			}
			return out.String(), err
		}
		stream = stream[n:]
	}
	return out.String(), nil
}
