package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// HeaderSize is the size in bytes of the fixed frame header.
const HeaderSize = 32

// DefaultMaxFrame is the default limit on the size in bytes of a whole frame,
// header included: the largest payload it admits is DefaultMaxFrame-HeaderSize.
const DefaultMaxFrame = 1 << 20

// minLength is the smallest valid length field: the header bytes after it.
const minLength = HeaderSize - 4

// Kind is the frame type carried in header byte 4. Only KindData through
// KindReject are valid; readers reject any other value as malformed.
type Kind uint8

// The frame kinds.
const (
	KindData    Kind = 1 // application data, echoed by reference reactors
	KindPing    Kind = 2 // control probe, echoed unchanged
	KindStop    Kind = 3 // asks the reactor to stop and account for its work
	KindStopAck Kind = 4 // answer to STOP; the payload is a JSON Ledger
	KindReject  Kind = 5 // refusal; the payload is a short UTF-8 reason
)

// Valid reports whether k is one of the defined kinds.
func (k Kind) Valid() bool { return k >= KindData && k <= KindReject }

// String returns the protocol name of k ("DATA", "STOP_ACK", …), or "Kind(n)"
// for an undefined value.
func (k Kind) String() string {
	switch k {
	case KindData:
		return "DATA"
	case KindPing:
		return "PING"
	case KindStop:
		return "STOP"
	case KindStopAck:
		return "STOP_ACK"
	case KindReject:
		return "REJECT"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Header is a decoded frame header. The reserved field is not represented: it is
// written as 0 and ignored when read.
type Header struct {
	Length uint32 // bytes after the length field: 28 + payload length
	Kind   Kind
	Flags  uint8
	Token  uint64 // connection token
	Seq    uint64 // sequence number
	SendNs uint64 // send time in nanoseconds
}

// FrameSize returns the size in bytes of the whole frame, Length+4. It is
// meaningful for headers accepted by ParseHeader.
func (h Header) FrameSize() int { return int(h.Length) + 4 }

// PayloadLen returns the payload size in bytes, Length-28. It is negative for a
// malformed length; ParseHeader never returns such a header without an error.
func (h Header) PayloadLen() int { return int(h.Length) - minLength }

// PutHeader writes h into b[:HeaderSize], with the reserved field 0, exactly as
// given: Length is not recomputed and nothing is validated. The caller must
// provide len(b) >= HeaderSize; a shorter b is a programming error and panics
// with an index out of range.
func PutHeader(b []byte, h Header) {
	_ = b[HeaderSize-1] // one bounds check for the whole header
	binary.LittleEndian.PutUint32(b[0:], h.Length)
	b[4] = byte(h.Kind)
	b[5] = h.Flags
	binary.LittleEndian.PutUint16(b[6:], 0)
	binary.LittleEndian.PutUint64(b[8:], h.Token)
	binary.LittleEndian.PutUint64(b[16:], h.Seq)
	binary.LittleEndian.PutUint64(b[24:], h.SendNs)
}

// getHeader decodes b[:HeaderSize] without validation.
func getHeader(b []byte) Header {
	_ = b[HeaderSize-1]
	return Header{
		Length: binary.LittleEndian.Uint32(b[0:]),
		Kind:   Kind(b[4]),
		Flags:  b[5],
		Token:  binary.LittleEndian.Uint64(b[8:]),
		Seq:    binary.LittleEndian.Uint64(b[16:]),
		SendNs: binary.LittleEndian.Uint64(b[24:]),
	}
}

// ParseHeader decodes and validates the header in b[:HeaderSize]; bytes after it
// are not looked at. max is the limit on the whole frame size (header included);
// max <= 0 means DefaultMaxFrame. Checks, in this order:
//
//   - len(b) < HeaderSize: the bare ErrShortHeader;
//   - length field below 28: ErrMalformed, wrapped with the value;
//   - kind outside 1..5: ErrMalformed, wrapped with the value;
//   - FrameSize() > max: ErrTooLarge, wrapped with the declared size and the limit.
//
// The reserved field is ignored. ParseHeader does not allocate unless it returns
// a wrapped error.
func ParseHeader(b []byte, max int) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, ErrShortHeader
	}
	h := getHeader(b)
	if max <= 0 {
		max = DefaultMaxFrame
	}
	// Compare in uint64: Length+4 may not fit an int on 32-bit platforms.
	if h.Length < minLength || !h.Kind.Valid() || uint64(h.Length)+4 > uint64(max) {
		return Header{}, headerError(h, max)
	}
	return h, nil
}

// headerError builds ParseHeader's error for a header that failed a check. It
// is kept out of ParseHeader so that the success path stays small enough to be
// inlined.
func headerError(h Header, max int) error {
	switch {
	case h.Length < minLength:
		return fmt.Errorf("length field %d below minimum %d: %w", h.Length, minLength, ErrMalformed)
	case !h.Kind.Valid():
		return fmt.Errorf("unknown kind %d: %w", uint8(h.Kind), ErrMalformed)
	default:
		return fmt.Errorf("declared frame size %d bytes exceeds limit %d: %w", uint64(h.Length)+4, max, ErrTooLarge)
	}
}

// AppendFrame appends one frame, header then payload, to dst and returns the
// extended slice. The length field is computed from len(payload); kind and flags
// are written as given, without validation. The payload is copied once. The
// caller must keep len(payload) <= math.MaxUint32-28, the most the length field
// can express; a larger payload is a programming error and panics.
func AppendFrame(dst []byte, kind Kind, flags uint8, token, seq, sendNs uint64, payload []byte) []byte {
	if uint64(len(payload)) > math.MaxUint32-minLength {
		panic(fmt.Sprintf("wire: AppendFrame: payload of %d bytes does not fit the 32-bit length field", len(payload)))
	}
	dst = slices.Grow(dst, HeaderSize+len(payload))
	n := len(dst)
	dst = dst[:n+HeaderSize]
	PutHeader(dst[n:], Header{
		Length: uint32(minLength + len(payload)),
		Kind:   kind,
		Flags:  flags,
		Token:  token,
		Seq:    seq,
		SendNs: sendNs,
	})
	return append(dst, payload...)
}
