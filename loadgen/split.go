package loadgen

import (
	"encoding/binary"

	"github.com/reactorlab/reactorlab/wire"
)

// splitter cuts a connection's answer stream into frames. The frames of a
// read are parsed where they lie, in the read's buffer; only the start of a
// frame that a read cuts off is copied (held) until the next read completes
// it. wire.Decoder, which it replaces on the loop's read path, copies every
// byte into a buffer of its own first (its Write and Next were 28% of the
// generator's CPU profile on BenchmarkCapacity hot=4/k=256).
//
// Its results are the Decoder's: the same limit on the whole frame size,
// headers validated as wire.ParseHeader does as soon as their 32 bytes have
// arrived (so an over-size header is refused before any room is reserved
// for its payload), the complete frames before a bad header returned before
// its error, and that error for good after it (TestSplitterMatchesDecoder).
// It returns whole frames, not decoded headers: the caller reads the few
// fields it needs where they lie, since a 40-byte wire.Header returned and
// passed by value is copied through the stack in moves that stall on its
// narrower stores. BenchmarkFrameCost k=256, median of 5: 106 ns per frame
// with the Decoder, 84 with a splitter returning wire.Headers, 57 with
// frames.
type splitter struct {
	max  int    // whole-frame limit, as wire.ParseHeader takes it
	in   []byte // what is left of the bytes given to feed
	held []byte // the start of a frame that the previous bytes cut off
	err  error  // sticky: the stream is broken
}

// feed gives the splitter the next bytes of the stream, to take frames from
// with next. p must stay unchanged until next has returned ok == false.
func (s *splitter) feed(p []byte) { s.in = p }

// reset forgets everything, for a new stream.
func (s *splitter) reset() { s.in, s.held, s.err = nil, s.held[:0], nil }

// next returns the next complete frame, header and payload, whose header
// is valid (see frameSize). The frame is a slice of the bytes given to feed
// (or of the held copy of a frame split between two feeds); it is valid
// until the next call. ok == false with a nil error means every complete
// frame has been returned; what is left of an incomplete one is held. ok ==
// false with an error means the stream is broken (the error wraps
// wire.ErrMalformed or wire.ErrTooLarge).
func (s *splitter) next() (frame []byte, ok bool, err error) {
	if s.err != nil {
		return nil, false, s.err
	}
	if len(s.held) > 0 {
		return s.nextHeld()
	}
	if len(s.in) < wire.HeaderSize {
		s.hold()
		return nil, false, nil
	}
	size, err := s.frameSize(s.in)
	if err != nil {
		return s.fail(err)
	}
	if len(s.in) < size {
		s.hold()
		return nil, false, nil
	}
	frame = s.in[:size:size]
	s.in = s.in[size:]
	return frame, true, nil
}

// nextHeld completes the held frame from s.in, if s.in has the rest of it.
func (s *splitter) nextHeld() (frame []byte, ok bool, err error) {
	if len(s.held) < wire.HeaderSize {
		s.take(wire.HeaderSize - len(s.held))
		if len(s.held) < wire.HeaderSize {
			return nil, false, nil
		}
	}
	size, err := s.frameSize(s.held)
	if err != nil {
		return s.fail(err)
	}
	s.take(size - len(s.held))
	if len(s.held) < size {
		return nil, false, nil
	}
	frame = s.held[:size:size]
	s.held = s.held[:0] // the frame stays valid: only a later call writes here
	return frame, true, nil
}

// frameSize validates the header at the start of b (at least HeaderSize
// bytes) as wire.ParseHeader(b, s.max) does, and returns the size of its
// frame. The checks are ParseHeader's, made on the two fields they read;
// a header that fails one goes to ParseHeader for its error.
func (s *splitter) frameSize(b []byte) (int, error) {
	length := binary.LittleEndian.Uint32(b)
	if length < wire.HeaderSize-4 || !wire.Kind(b[4]).Valid() || uint64(length)+4 > uint64(s.max) {
		if _, err := wire.ParseHeader(b, s.max); err != nil {
			return 0, err
		}
	}
	return int(length) + 4, nil
}

// take moves up to n bytes from s.in to the held frame (whose header has
// been validated when it grows past one: held never exceeds the limit).
func (s *splitter) take(n int) {
	n = min(n, len(s.in))
	s.held = append(s.held, s.in[:n]...)
	s.in = s.in[n:]
}

// hold keeps the start of an incomplete frame (s.held is empty).
func (s *splitter) hold() {
	s.held = append(s.held, s.in...)
	s.in = nil
}

func (s *splitter) fail(err error) ([]byte, bool, error) {
	s.err, s.in, s.held = err, nil, s.held[:0]
	return nil, false, err
}

// frameHeader decodes the header of a frame next returned.
func frameHeader(frame []byte) wire.Header {
	h, _ := wire.ParseHeader(frame, len(frame)) // valid: next checked it
	return h
}
