package wire

import "testing"

var sinkHeader Header

func BenchmarkParseHeader(b *testing.B) {
	f := AppendFrame(nil, KindData, 0, 1, 2, 3, payloadOf(64))
	b.ReportAllocs()
	for b.Loop() {
		h, err := ParseHeader(f, DefaultMaxFrame)
		if err != nil {
			b.Fatal(err)
		}
		sinkHeader = h
	}
}

// BenchmarkDecoder64B measures one 64-byte-payload frame per op: Write, then Next.
func BenchmarkDecoder64B(b *testing.B) {
	f := AppendFrame(nil, KindData, 0, 1, 2, 3, payloadOf(64))
	d := NewDecoder(0)
	b.SetBytes(int64(len(f)))
	b.ReportAllocs()
	for b.Loop() {
		d.Write(f)
		h, _, ok, err := d.Next()
		if !ok || err != nil {
			b.Fatal(ok, err)
		}
		sinkHeader = h
	}
}

// BenchmarkDecoder64BBatch writes 64 frames per Write and drains them; ns/op
// is per frame.
func BenchmarkDecoder64BBatch(b *testing.B) {
	const batch = 64
	var stream []byte
	for i := range batch {
		stream = AppendFrame(stream, KindData, 0, 1, uint64(i), 3, payloadOf(64))
	}
	d := NewDecoder(0)
	b.SetBytes(int64(len(stream) / batch))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%batch == 0 {
			d.Write(stream)
		}
		i++
		h, _, ok, err := d.Next()
		if !ok || err != nil {
			b.Fatal(ok, err)
		}
		sinkHeader = h
	}
}
