package loadgen

import "github.com/reactorlab/reactorlab/wire"

// splitter cuts a connection's answer stream into frames. The frames of a
// read are parsed where they lie, in the read's buffer; only the start of a
// frame that a read cuts off is copied (held) until the next read completes
// it. wire.Decoder, which it replaces on the loop's read path, copies every
// byte into a buffer of its own first: its Write and Next were 28% of the
// generator's CPU profile on BenchmarkCapacity hot=4/k=256.
//
// Its results are the Decoder's: the same limit on the whole frame size,
// headers validated by wire.ParseHeader as soon as their 32 bytes have
// arrived (so an over-size header is refused before any room is reserved
// for its payload), the complete frames before a bad header returned before
// its error, and that error for good after it.
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

// next returns the next complete frame: its header and payload. The payload
// is a slice of the bytes given to feed (or of the held copy of a frame
// split between two feeds); it is valid until the next call. ok == false
// with a nil error means every complete frame has been returned; what is
// left of an incomplete one is held. ok == false with an error means the
// stream is broken (the error wraps wire.ErrMalformed or wire.ErrTooLarge).
func (s *splitter) next() (h wire.Header, payload []byte, ok bool, err error) {
	if s.err != nil {
		return wire.Header{}, nil, false, s.err
	}
	if len(s.held) > 0 {
		return s.nextHeld()
	}
	if len(s.in) < wire.HeaderSize {
		s.hold()
		return wire.Header{}, nil, false, nil
	}
	if h, err = wire.ParseHeader(s.in, s.max); err != nil {
		return s.fail(err)
	}
	size := h.FrameSize()
	if len(s.in) < size {
		s.hold()
		return wire.Header{}, nil, false, nil
	}
	payload = s.in[wire.HeaderSize:size:size]
	s.in = s.in[size:]
	return h, payload, true, nil
}

// nextHeld completes the held frame from s.in, if s.in has the rest of it.
func (s *splitter) nextHeld() (h wire.Header, payload []byte, ok bool, err error) {
	if len(s.held) < wire.HeaderSize {
		s.take(wire.HeaderSize - len(s.held))
		if len(s.held) < wire.HeaderSize {
			return wire.Header{}, nil, false, nil
		}
	}
	if h, err = wire.ParseHeader(s.held, s.max); err != nil {
		return s.fail(err)
	}
	size := h.FrameSize()
	s.take(size - len(s.held))
	if len(s.held) < size {
		return wire.Header{}, nil, false, nil
	}
	payload = s.held[wire.HeaderSize:size:size]
	// s.held = s.held[:0] // the payload stays valid: only a later call writes here
	return h, payload, true, nil
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

func (s *splitter) fail(err error) (wire.Header, []byte, bool, error) {
	s.err, s.in, s.held = err, nil, s.held[:0]
	return wire.Header{}, nil, false, err
}
