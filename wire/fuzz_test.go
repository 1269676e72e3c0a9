package wire

import (
	"bytes"
	"errors"
	"testing"
)

// fuzzMax is the limit under fuzzing: small, so random headers often pass it
// and the fuzzer reaches complete frames.
const fuzzMax = 256

// fuzzSeeds are the in-code seed corpus: valid frames and streams, over-size
// and malformed headers, and short input.
func fuzzSeeds() [][]byte {
	var stream []byte
	for i, k := range allKinds {
		stream = AppendFrame(stream, k, uint8(i), 7, uint64(i), 1e9, payloadOf(i*13))
	}
	withReserved := AppendFrame(nil, KindPing, 0, 1, 2, 3, []byte("r"))
	withReserved[6], withReserved[7] = 0xAB, 0xCD
	ledger := AppendFrame(nil, KindStopAck, 0, 1, 2, 3, EncodeLedger(Ledger{5, 4, 1}))
	return [][]byte{
		{},
		AppendFrame(nil, KindData, 0, 0, 0, 0, nil),
		AppendFrame(nil, KindPing, 1, 2, 3, 4, []byte{0xFF}),
		AppendFrame(nil, KindData, 0, 0, 0, 0, payloadOf(fuzzMax-HeaderSize)), // exactly the limit
		stream,
		stream[:len(stream)-5], // ends inside a payload
		stream[:HeaderSize+3],  // ends inside the second header
		ledger,
		withReserved,
		append(bytes.Clone(stream), rawHeader(64<<20, 1)...),                                  // over-size after valid frames
		append(rawHeader(fuzzMax-4+1, 2), payloadOf(100)...),                                  // one byte over the limit
		append(AppendFrame(nil, KindReject, 0, 0, 0, 0, []byte("busy")), rawHeader(27, 1)...), // length < 28
		rawHeader(28, 0), // kind 0
		rawHeader(28, 6), // kind 6
		rawHeader(28, 1)[:HeaderSize-1],
	}
}

// chunker returns chunk sizes derived from data itself, 1..64 bytes.
func chunker(data []byte) func() int {
	i := 0
	return func() int {
		if len(data) == 0 {
			return 1
		}
		n := 1 + int(data[(i*31+7)%len(data)]^byte(i))%64
		i++
		return n
	}
}

func FuzzDecoder(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		type result struct {
			frames   []frame
			err      error
			buffered int
		}
		run := func(size func() int) result {
			d := NewDecoder(fuzzMax)
			frames, err := feed(t, d, data, size) // checks persistence of the error
			for _, fr := range frames {
				h := fr.h
				if h.FrameSize() > fuzzMax || h.Length < 28 || !h.Kind.Valid() {
					t.Fatalf("invalid header returned: %+v", h)
				}
				if len(fr.payload) != h.PayloadLen() || h.FrameSize() != HeaderSize+len(fr.payload) {
					t.Fatalf("payload of %d bytes for header %+v", len(fr.payload), h)
				}
			}
			return result{frames, err, d.Buffered()}
		}
		all := run(whole)
		for _, tc := range []struct {
			name string
			size func() int
		}{
			{"bytewise", bytewise},
			{"derived", chunker(data)},
		} {
			name, r := tc.name, run(tc.size)
			if len(r.frames) != len(all.frames) || r.buffered != all.buffered ||
				(r.err == nil) != (all.err == nil) || (r.err != nil && r.err.Error() != all.err.Error()) {
				t.Fatalf("%s feed: %d frames, %d buffered, err %v; whole: %d frames, %d buffered, err %v",
					name, len(r.frames), r.buffered, r.err, len(all.frames), all.buffered, all.err)
			}
			for i := range r.frames {
				if r.frames[i].h != all.frames[i].h || !bytes.Equal(r.frames[i].payload, all.frames[i].payload) {
					t.Fatalf("%s feed: frame %d differs", name, i)
				}
			}
		}

		// Re-encoding the frames reproduces the consumed prefix byte for byte,
		// except the reserved field, which readers ignore and writers zero.
		var enc []byte
		want := bytes.Clone(data)
		for _, fr := range all.frames {
			if len(enc)+HeaderSize <= len(want) {
				want[len(enc)+6], want[len(enc)+7] = 0, 0
			}
			enc = AppendFrame(enc, fr.h.Kind, fr.h.Flags, fr.h.Token, fr.h.Seq, fr.h.SendNs, fr.payload)
		}
		if len(enc) > len(data) || !bytes.Equal(enc, want[:len(enc)]) {
			t.Fatalf("re-encoded frames (%d bytes) do not match the input prefix", len(enc))
		}

		// What stopped the decoder is exactly what ParseHeader says about the rest.
		rest := data[len(enc):]
		h, perr := ParseHeader(rest, fuzzMax)
		switch {
		case all.err != nil:
			if perr == nil || perr.Error() != all.err.Error() ||
				!(errors.Is(all.err, ErrMalformed) || errors.Is(all.err, ErrTooLarge)) {
				t.Fatalf("decoder error %v; ParseHeader on the rest: %v", all.err, perr)
			}
			if all.buffered != 0 {
				t.Fatalf("Buffered() = %d after failure, want 0", all.buffered)
			}
		case perr == nil && h.FrameSize() <= len(rest):
			t.Fatalf("a complete valid frame (%+v) was not returned", h)
		case perr != nil && !errors.Is(perr, ErrShortHeader):
			t.Fatalf("decoder missed a bad header: %v", perr)
		case all.buffered != len(rest):
			t.Fatalf("Buffered() = %d, want %d unconsumed bytes", all.buffered, len(rest))
		}
	})
}
