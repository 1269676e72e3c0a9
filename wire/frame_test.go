package wire

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// payloadOf returns n deterministic, position-dependent bytes.
func payloadOf(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + i>>8)
	}
	return p
}

var allKinds = []Kind{KindData, KindPing, KindStop, KindStopAck, KindReject}

func TestHeaderLayout(t *testing.T) {
	h := Header{
		Length: 0x0403_0201,
		Kind:   KindStopAck,
		Flags:  0xA5,
		Token:  0x1817_1615_1413_1211,
		Seq:    0x2827_2625_2423_2221,
		SendNs: 0x3837_3635_3433_3231,
	}
	// Hand-written little-endian expectation, one line per field.
	want := []byte{
		0x01, 0x02, 0x03, 0x04, // length
		0x04,       // kind
		0xA5,       // flags
		0x00, 0x00, // reserved
		0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, // token
		0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, // seq
		0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, // send ns
	}
	if len(want) != HeaderSize {
		t.Fatalf("expectation has %d bytes, want %d", len(want), HeaderSize)
	}
	got := make([]byte, HeaderSize+4)
	for i := range got {
		got[i] = 0xEE // PutHeader must overwrite reserved and touch nothing past the header
	}
	PutHeader(got, h)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("byte %d = %#02x, want %#02x", i, got[i], want[i])
		}
	}
	if !bytes.Equal(got[HeaderSize:], []byte{0xEE, 0xEE, 0xEE, 0xEE}) {
		t.Errorf("PutHeader wrote past the header: % x", got[HeaderSize:])
	}
	if back := getHeader(want); back != h {
		t.Errorf("getHeader = %+v, want %+v", back, h)
	}
}

func TestAppendFrameLayout(t *testing.T) {
	got := AppendFrame([]byte("prefix"), KindReject, 0x01, 2, 3, 4, []byte("no"))
	want := []byte("prefix")
	want = append(want,
		30, 0, 0, 0, // length = 28 + 2
		5, 0x01, 0, 0, // kind REJECT, flags, reserved
		2, 0, 0, 0, 0, 0, 0, 0, // token
		3, 0, 0, 0, 0, 0, 0, 0, // seq
		4, 0, 0, 0, 0, 0, 0, 0, // send ns
		'n', 'o')
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendFrame =\n% x\nwant\n% x", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, kind := range allKinds {
		for _, size := range []int{0, 1, 1000, 256 << 10} {
			t.Run(kind.String()+"/"+strconv.Itoa(size), func(t *testing.T) {
				payload := payloadOf(size)
				frame := AppendFrame(nil, kind, 0x80|uint8(kind), 0xDEAD_BEEF_0000_0001, uint64(size), 1<<62, payload)
				if len(frame) != HeaderSize+size {
					t.Fatalf("frame is %d bytes, want %d", len(frame), HeaderSize+size)
				}
				want := Header{
					Length: uint32(28 + size),
					Kind:   kind,
					Flags:  0x80 | uint8(kind),
					Token:  0xDEAD_BEEF_0000_0001,
					Seq:    uint64(size),
					SendNs: 1 << 62,
				}
				h, err := ParseHeader(frame, DefaultMaxFrame)
				if err != nil {
					t.Fatalf("ParseHeader: %v", err)
				}
				if h != want || h.FrameSize() != len(frame) || h.PayloadLen() != size {
					t.Fatalf("ParseHeader = %+v (frame %d, payload %d), want %+v", h, h.FrameSize(), h.PayloadLen(), want)
				}
				if !bytes.Equal(frame[HeaderSize:], payload) {
					t.Fatal("payload bytes differ")
				}

				d := NewDecoder(0)
				d.Write(frame)
				h, p, ok, err := d.Next()
				if !ok || err != nil || h != want || !bytes.Equal(p, payload) {
					t.Fatalf("Decoder.Next = %+v, %d bytes, %v, %v; want %+v", h, len(p), ok, err, want)
				}
				if _, _, ok, err := d.Next(); ok || err != nil || d.Buffered() != 0 {
					t.Fatalf("after the only frame: ok=%v err=%v buffered=%d", ok, err, d.Buffered())
				}
			})
		}
	}
}

// rawHeader builds a header by hand, so malformed values can be expressed.
func rawHeader(length uint32, kind byte) []byte {
	b := make([]byte, HeaderSize)
	b[0], b[1], b[2], b[3] = byte(length), byte(length>>8), byte(length>>16), byte(length>>24)
	b[4] = kind
	return b
}

func TestParseHeaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b       []byte
		max     int
		want    error
		mention []string // substrings the message must contain
	}{
		{"empty", nil, 0, ErrShortHeader, nil},
		{"31 bytes", rawHeader(28, 1)[:31], 0, ErrShortHeader, nil},
		{"length 0", rawHeader(0, 1), 0, ErrMalformed, []string{"length", " 0 "}},
		{"length 27", rawHeader(27, 1), 0, ErrMalformed, []string{"length", "27"}},
		{"kind 0", rawHeader(28, 0), 0, ErrMalformed, []string{"kind", " 0"}},
		{"kind 6", rawHeader(28, 6), 0, ErrMalformed, []string{"kind", " 6"}},
		{"kind 255", rawHeader(28, 255), 0, ErrMalformed, []string{"kind", "255"}},
		{"64 MiB default limit", rawHeader(64<<20, 1), 0, ErrTooLarge, []string{"67108868", "1048576"}},
		{"one over limit", rawHeader(1000-4+1, 1), 1000, ErrTooLarge, []string{"1001", "1000"}},
		{"max length field", rawHeader(^uint32(0), 1), DefaultMaxFrame, ErrTooLarge, []string{"4294967299"}},
		{"limit below header", rawHeader(28, 1), 31, ErrTooLarge, []string{"32", "31"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseHeader(tc.b, tc.max)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ParseHeader error = %v, want %v", err, tc.want)
			}
			for _, s := range tc.mention {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestParseHeaderAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		max  int
	}{
		{"exactly the limit", rawHeader(1000-4, 2), 1000},
		{"exactly the default limit", rawHeader(DefaultMaxFrame-4, 1), -1},
		{"empty payload", rawHeader(28, 5), 32},
		{"reserved ignored", func() []byte { b := rawHeader(28, 3); b[6], b[7] = 0xFF, 0x01; return b }(), 0},
		{"trailing bytes ignored", append(rawHeader(28, 4), 1, 2, 3), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseHeader(tc.b, tc.max); err != nil {
				t.Fatalf("ParseHeader: %v", err)
			}
		})
	}
}

func TestParseHeaderAllocs(t *testing.T) {
	b := AppendFrame(nil, KindData, 0, 1, 2, 3, payloadOf(64))
	short := b[:10]
	if n := testing.AllocsPerRun(100, func() {
		if _, err := ParseHeader(b, DefaultMaxFrame); err != nil {
			t.Fatal(err)
		}
		if _, err := ParseHeader(short, DefaultMaxFrame); err != ErrShortHeader {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("ParseHeader allocates %v times per call, want 0", n)
	}
}

func TestKindString(t *testing.T) {
	for _, tc := range []struct {
		k     Kind
		want  string
		valid bool
	}{
		{0, "Kind(0)", false},
		{KindData, "DATA", true},
		{KindPing, "PING", true},
		{KindStop, "STOP", true},
		{KindStopAck, "STOP_ACK", true},
		{KindReject, "REJECT", true},
		{6, "Kind(6)", false},
		{255, "Kind(255)", false},
	} {
		if got := tc.k.String(); got != tc.want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(tc.k), got, tc.want)
		}
		if got := tc.k.Valid(); got != tc.valid {
			t.Errorf("Kind(%d).Valid() = %v, want %v", uint8(tc.k), got, tc.valid)
		}
	}
}
