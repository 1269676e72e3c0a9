package wire

// minBuffer is the smallest buffer a Decoder allocates: enough for a header and
// a few small frames, far below any limit worth configuring.
const minBuffer = 512

// Decoder splits a byte stream into frames. Feed it with Write in chunks of any
// size and take frames out with Next.
//
// Memory: the header of each frame is validated (ParseHeader, with the
// decoder's limit) as soon as its 32 bytes have arrived, inside Write; only then
// is room reserved for the rest of that frame, so a declared size above the
// limit never causes an allocation of that size. The buffer holds the bytes of
// complete frames not yet returned by Next plus one partial frame; consumed
// bytes are reclaimed before the buffer grows, and a caller that drains Next
// after every Write reuses the same buffer without allocating once it has seen
// the largest frame.
//
// Copies: each byte is copied from Write's argument into the buffer, and Next
// returns a slice of the buffer, not a copy. Room for a frame's payload is
// reserved when its header is validated, so payload bytes already held move
// only when room is made for a later frame: that happens only to complete
// frames the caller has not yet taken with Next.
//
// Errors: the first malformed or over-size header makes the decoder fail for
// good. Next still returns the complete frames before it, then that error on
// every call; Write discards everything from the bad header on.
//
// The zero Decoder is usable, with limit DefaultMaxFrame. A Decoder is not safe
// for concurrent use.
type Decoder struct {
	max int    // whole-frame limit; <= 0 means DefaultMaxFrame
	buf []byte // buf[off:] are the held bytes
	off int    // start of the next frame Next returns
	// scan is the start of the first incomplete frame: buf[off:scan] are
	// complete frames whose headers were validated.
	scan int
	end  int   // end of the frame at scan once its header is validated, else 0
	err  error // sticky: the header at scan failed validation
}

// NewDecoder returns a Decoder that refuses frames whose whole size, header
// included, exceeds max bytes. max <= 0 means DefaultMaxFrame.
func NewDecoder(max int) *Decoder {
	return &Decoder{max: max}
}

// Write feeds the next bytes of the stream; frames may be split anywhere across
// calls, and one call may carry many frames. It never retains p, always returns
// len(p), nil, and reports nothing itself: a bad header surfaces from Next.
// Write invalidates payloads previously returned by Next.
func (d *Decoder) Write(p []byte) (int, error) {
	n := len(p)
	if d.err != nil {
		return n, nil
	}
	if d.off == len(d.buf) {
		// Everything received was consumed (so no partial frame is held):
		// start again at the front, which costs nothing.
		d.buf, d.off, d.scan = d.buf[:0], 0, 0
	}
	for len(p) > 0 {
		if d.end == 0 {
			// Complete the header of the frame at scan, then validate it
			// before reserving anything for its payload.
			k := min(d.scan+HeaderSize-len(d.buf), len(p))
			d.reserve(k)
			d.buf = append(d.buf, p[:k]...)
			p = p[k:]
			if len(d.buf) < d.scan+HeaderSize {
				break // p is exhausted
			}
			h, err := ParseHeader(d.buf[d.scan:], d.max)
			if err != nil {
				d.err = err
				d.buf = d.buf[:d.scan]
				return n, nil
			}
			d.reserve(d.scan + h.FrameSize() - len(d.buf)) // may move scan
			d.end = d.scan + h.FrameSize()
		}
		k := min(d.end-len(d.buf), len(p))
		d.buf = append(d.buf, p[:k]...)
		p = p[k:]
		if len(d.buf) == d.end {
			d.scan, d.end = d.end, 0
		}
	}
	return n, nil
}

// reserve makes room for n more bytes after len(d.buf): in place if there is
// room, else by moving the held bytes to the front if that suffices, else in a
// new buffer of at least twice the capacity. Offsets are rebased accordingly.
func (d *Decoder) reserve(n int) {
	if cap(d.buf)-len(d.buf) >= n {
		return
	}
	held := len(d.buf) - d.off
	if held+n <= cap(d.buf) {
		copy(d.buf, d.buf[d.off:])
		d.buf = d.buf[:held]
	} else {
		nb := make([]byte, held, max(held+n, 2*cap(d.buf), minBuffer))
		copy(nb, d.buf[d.off:])
		d.buf = nb
	}
	d.scan -= d.off
	if d.end != 0 {
		d.end -= d.off
	}
	d.off = 0
}

// Next returns the next complete frame: its validated header and its payload,
// of length h.PayloadLen(). The payload is a slice of the decoder's buffer, not
// a copy: it is valid only until the next call to Write, Next or Reset, and the
// caller must copy what it keeps. Results:
//
//   - ok == true, err == nil: a frame;
//   - ok == false, err == nil: more bytes are needed;
//   - ok == false, err != nil: the stream is broken, and every later call
//     returns the same error. err wraps ErrMalformed or ErrTooLarge (the latter as
//     soon as the over-size header's 32 bytes have been written).
func (d *Decoder) Next() (h Header, payload []byte, ok bool, err error) {
	if d.off == d.scan {
		return Header{}, nil, false, d.err
	}
	h = getHeader(d.buf[d.off:])
	end := d.off + h.FrameSize()
	payload = d.buf[d.off+HeaderSize : end : end] // capped: appending cannot clobber the next frame
	d.off = end
	return h, payload, true, nil
}

// Buffered returns the number of bytes held: those of complete frames not yet
// returned by Next and those of the partial frame after them. After a failure,
// bytes from the bad header on are discarded and not counted.
func (d *Decoder) Buffered() int { return len(d.buf) - d.off }

// Reset discards all held bytes and any error, keeping the limit and the buffer's
// capacity, so the Decoder can serve a new stream.
func (d *Decoder) Reset() {
	d.buf, d.off, d.scan, d.end, d.err = d.buf[:0], 0, 0, 0, nil
}
