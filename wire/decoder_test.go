package wire

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"
)

// frame is a decoded frame with its payload copied out of the decoder.
type frame struct {
	h       Header
	payload []byte
}

// feed writes data to d in chunks whose sizes come from size (0 means an empty
// Write), draining Next after every Write, and returns the frames and the first
// error. It fails the test if Write misreports or if an error does not persist.
func feed(t testing.TB, d *Decoder, data []byte, size func() int) ([]frame, error) {
	t.Helper()
	var (
		frames []frame
		failed error
	)
	for len(data) > 0 {
		c := data[:min(size(), len(data))]
		data = data[len(c):]
		if n, err := d.Write(c); n != len(c) || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v", len(c), n, err)
		}
		for {
			h, p, ok, err := d.Next()
			if err != nil {
				if ok {
					t.Fatalf("Next returned ok with error %v", err)
				}
				if failed != nil && err != failed {
					t.Fatalf("error changed from %v to %v", failed, err)
				}
				failed = err
				break
			}
			if failed != nil {
				t.Fatalf("Next returned ok=%v, nil error after error %v", ok, failed)
			}
			if !ok {
				break
			}
			frames = append(frames, frame{h, bytes.Clone(p)})
		}
	}
	return frames, failed
}

// whole, bytewise and fixed are chunk-size functions for feed.
func whole() int    { return 1 << 30 }
func bytewise() int { return 1 }
func fixed(n int) func() int {
	return func() int { return n }
}

// split cuts b into chunks whose sizes come from size.
func split(b []byte, size func() int) [][]byte {
	var chunks [][]byte
	for len(b) > 0 {
		n := min(size(), len(b))
		chunks = append(chunks, b[:n])
		b = b[n:]
	}
	return chunks
}

func TestDecoderSplits(t *testing.T) {
	var (
		stream []byte
		want   []frame
	)
	for i, size := range []int{0, 1, 64, 1000, 0, 256 << 10, 31, 32, 33} {
		kind := allKinds[i%len(allKinds)]
		p := payloadOf(size)
		stream = AppendFrame(stream, kind, uint8(i), uint64(i)+100, uint64(i), uint64(i)<<40, p)
		want = append(want, frame{Header{uint32(28 + size), kind, uint8(i), uint64(i) + 100, uint64(i), uint64(i) << 40}, p})
	}
	type strategy struct {
		name string
		size func() int
	}
	toggle := 0
	strategies := []strategy{
		{"all at once", whole},
		{"one byte at a time", bytewise},
		{"header-sized", fixed(HeaderSize)},
		{"with empty writes", func() int { toggle++; return (toggle % 2) * 4093 }},
	}
	for seed := range uint64(5) {
		r := rand.New(rand.NewPCG(seed, 0x5EED))
		// Mix tiny chunks (splitting headers) with large ones (spanning frames).
		strategies = append(strategies, strategy{"random seed " + strconv.FormatUint(seed, 10), func() int {
			if r.IntN(2) == 0 {
				return 1 + r.IntN(40)
			}
			return 1 + r.IntN(64<<10)
		}})
	}
	for _, s := range strategies {
		t.Run(s.name, func(t *testing.T) {
			d := NewDecoder(0)
			got, err := feed(t, d, stream, s.size)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if len(got) != len(want) {
				t.Fatalf("got %d frames, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].h != want[i].h || !bytes.Equal(got[i].payload, want[i].payload) {
					t.Errorf("frame %d = %+v (%d bytes), want %+v (%d bytes)",
						i, got[i].h, len(got[i].payload), want[i].h, len(want[i].payload))
				}
			}
			if d.Buffered() != 0 {
				t.Errorf("Buffered() = %d after the whole stream, want 0", d.Buffered())
			}
		})
	}
}

// TestDecoderWriteAllThenDrain writes several frames without calling Next in
// between, which exercises compaction and growth with complete frames held.
func TestDecoderWriteAllThenDrain(t *testing.T) {
	d := NewDecoder(0)
	var want, got []byte
	take := func(h Header, p []byte) {
		got = AppendFrame(got, h.Kind, h.Flags, h.Token, h.Seq, h.SendNs, p)
	}
	for i := range 50 {
		f := AppendFrame(nil, KindData, 0, 0, uint64(i), 0, payloadOf(i*37))
		want = append(want, f...)
		for _, c := range split(f, fixed(7)) {
			d.Write(c)
		}
		if i%10 == 3 { // take one frame out now and then, so off > 0 during growth
			h, p, ok, err := d.Next()
			if !ok || err != nil {
				t.Fatalf("Next = %v, %v", ok, err)
			}
			take(h, p)
		}
	}
	if d.Buffered() != len(want)-len(got) {
		t.Fatalf("Buffered() = %d, want %d", d.Buffered(), len(want)-len(got))
	}
	for {
		h, p, ok, err := d.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		take(h, p)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("frames held across writes differ: got %d bytes, want %d", len(got), len(want))
	}
}

func TestDecoderOverSize(t *testing.T) {
	const declared = 64 << 20
	hdr := rawHeader(declared, byte(KindData))
	body := make([]byte, 2<<20) // more bytes after the bad header; must be discarded

	for _, tc := range []struct {
		name   string
		chunks [][]byte
	}{
		{"byte by byte", split(hdr, bytewise)},
		{"header at once", [][]byte{hdr}},
		{"header and body in one write", [][]byte{append(bytes.Clone(hdr), body...)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)

			d := NewDecoder(1 << 20)
			fed := 0
			var err error
			for _, c := range tc.chunks {
				d.Write(c)
				fed += len(c)
				var ok bool
				_, _, ok, err = d.Next()
				if ok {
					t.Fatal("Next returned a frame")
				}
				if fed < HeaderSize && err != nil {
					t.Fatalf("error after %d bytes: %v", fed, err)
				}
			}
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("after %d bytes: err = %v, want ErrTooLarge", fed, err)
			}
			d.Write(body)
			if _, _, _, err2 := d.Next(); err2 != err {
				t.Fatalf("error did not persist: %v then %v", err, err2)
			}

			runtime.ReadMemStats(&after)
			if c := cap(d.buf); c > minBuffer {
				t.Errorf("decoder buffer capacity %d, want <= %d", c, minBuffer)
			}
			if d.Buffered() != 0 {
				t.Errorf("Buffered() = %d after failure, want 0", d.Buffered())
			}
			// The test itself allocates at most one 2 MiB body; the decoder must
			// add nothing near the declared 64 MiB.
			if delta := after.TotalAlloc - before.TotalAlloc; delta > 4<<20 {
				t.Errorf("allocated %d bytes while refusing a %d-byte frame", delta, declared)
			}
		})
	}
}

func TestDecoderOverSizeAllocs(t *testing.T) {
	hdr := rawHeader(64<<20, byte(KindData))
	var d Decoder
	d.max = 1 << 20
	// Warm up the buffer once; then refusing costs only the error value.
	d.Write(hdr)
	allocs := testing.AllocsPerRun(20, func() {
		d.Reset()
		for i := range hdr {
			d.Write(hdr[i : i+1])
		}
		if _, _, _, err := d.Next(); !errors.Is(err, ErrTooLarge) {
			t.Fatal(err)
		}
	})
	if allocs > 6 { // the wrapped error: fmt.Errorf, its arguments and message
		t.Fatalf("%v allocations per refused header", allocs)
	}
	if cap(d.buf) > minBuffer {
		t.Fatalf("buffer capacity %d", cap(d.buf))
	}
}

func TestDecoderMalformed(t *testing.T) {
	valid := AppendFrame(nil, KindPing, 0, 1, 2, 3, []byte("ok"))
	for _, tc := range []struct {
		name string
		hdr  []byte
		max  int
		want error
	}{
		{"length 0", rawHeader(0, 1), 0, ErrMalformed},
		{"length 27", rawHeader(27, 1), 0, ErrMalformed},
		{"kind 0", rawHeader(28, 0), 0, ErrMalformed},
		{"kind 6", rawHeader(28, 6), 0, ErrMalformed},
		{"one over limit", rawHeader(100-4+1, 1), 100, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(tc.max)
			d.Write(valid)
			stream := append(bytes.Clone(tc.hdr), "trailing bytes"...)
			for i := range stream {
				d.Write(stream[i : i+1])
				if i+1 == HeaderSize-1 {
					// The valid frame comes out first; then the partial header
					// is simply not ready yet.
					if _, _, ok, err := d.Next(); !ok || err != nil {
						t.Fatalf("valid frame: ok=%v err=%v", ok, err)
					}
					if _, _, ok, err := d.Next(); ok || err != nil {
						t.Fatalf("31 header bytes: ok=%v err=%v, want need-more", ok, err)
					}
					if d.Buffered() != HeaderSize-1 {
						t.Fatalf("Buffered() = %d, want %d", d.Buffered(), HeaderSize-1)
					}
				}
			}
			_, _, ok, err := d.Next()
			if ok || !errors.Is(err, tc.want) {
				t.Fatalf("Next = ok %v, err %v; want %v", ok, err, tc.want)
			}
			if _, _, _, again := d.Next(); again != err {
				t.Fatalf("second Next error %v, want the same %v", again, err)
			}
		})
	}
}

func TestDecoderShortHeaderIsNotAnError(t *testing.T) {
	d := NewDecoder(0)
	d.Write(rawHeader(28, 1)[:HeaderSize-1])
	if _, _, ok, err := d.Next(); ok || err != nil {
		t.Fatalf("Next = ok %v, err %v; want need-more", ok, err)
	}
	d.Write([]byte{0})
	if h, p, ok, err := d.Next(); !ok || err != nil || h.Kind != KindData || len(p) != 0 {
		t.Fatalf("Next = %+v, %d bytes, ok %v, err %v", h, len(p), ok, err)
	}
}

func TestDecoderFramesBeforeErrorComeFirst(t *testing.T) {
	var stream []byte
	for i := range 3 {
		stream = AppendFrame(stream, KindData, 0, 0, uint64(i), 0, payloadOf(10))
	}
	stream = append(stream, rawHeader(27, 1)...)
	stream = AppendFrame(stream, KindData, 0, 0, 99, 0, nil) // never reached
	d := NewDecoder(0)
	frames, err := feed(t, d, stream, whole)
	if len(frames) != 3 || !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %d frames and %v, want 3 frames then ErrMalformed", len(frames), err)
	}
	d.Write(AppendFrame(nil, KindPing, 0, 0, 0, 0, nil))
	if _, _, ok, again := d.Next(); ok || again != err {
		t.Fatalf("after more writes: ok %v, err %v; want the same error", ok, again)
	}
}

func TestDecoderPayloadAliasesBuffer(t *testing.T) {
	d := NewDecoder(0)
	d.Write(AppendFrame(nil, KindData, 0, 0, 0, 0, []byte("abc")))
	d.Write(AppendFrame(nil, KindData, 0, 0, 1, 0, []byte("def")))
	_, p, ok, err := d.Next()
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	if &p[0] != &d.buf[HeaderSize] {
		t.Error("payload is a copy, want a slice of the decoder's buffer")
	}
	if cap(p) != len(p) {
		t.Errorf("payload cap %d, want %d so appends cannot clobber the next frame", cap(p), len(p))
	}
}

func TestDecoderGrowsToFrameSize(t *testing.T) {
	f := AppendFrame(nil, KindData, 0, 0, 0, 0, payloadOf(256<<10))
	d := NewDecoder(0)
	feed(t, d, f, fixed(1000))
	if cap(d.buf) != len(f) {
		t.Errorf("buffer capacity %d after one %d-byte frame, want exactly the frame", cap(d.buf), len(f))
	}
}

func TestDecoderSteadyStateAllocs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		size  int
		chunk int
	}{
		{"64B whole", 64, 1 << 20},
		{"64B bytewise", 64, 1},
		{"256KiB in 1000B chunks", 256 << 10, 1000},
		{"odd chunks across frames", 100, 77},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := AppendFrame(nil, KindData, 0, 0, 0, 0, payloadOf(tc.size))
			stream := append(bytes.Clone(f), f...)
			chunks := split(stream, func() int { return tc.chunk })
			d := NewDecoder(0)
			run := func() {
				n := 0
				for _, c := range chunks {
					d.Write(c)
					for {
						_, _, ok, err := d.Next()
						if err != nil {
							t.Fatal(err)
						}
						if !ok {
							break
						}
						n++
					}
				}
				if n != 2 {
					t.Fatalf("%d frames, want 2", n)
				}
			}
			run() // warm up
			if allocs := testing.AllocsPerRun(50, run); allocs != 0 {
				t.Fatalf("%v allocations per round in steady state, want 0", allocs)
			}
		})
	}
}

func TestDecoderZeroValueAndReset(t *testing.T) {
	var d Decoder // limit DefaultMaxFrame
	d.Write(rawHeader(DefaultMaxFrame-4+1, 1))
	if _, _, _, err := d.Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("zero Decoder: err = %v, want ErrTooLarge", err)
	}
	d.Reset()
	d.Write(AppendFrame(nil, KindStop, 0, 0, 0, 0, nil))
	if h, _, ok, err := d.Next(); !ok || err != nil || h.Kind != KindStop {
		t.Fatalf("after Reset: %+v, ok %v, err %v", h, ok, err)
	}
}
