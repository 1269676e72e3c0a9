package wire

import "testing"

func BenchmarkProbeFeed(b *testing.B) {
	data := payloadOf(4096)
	copy(data, AppendFrame(nil, KindData, 0, 0, 0, 0, payloadOf(100)))
	for b.Loop() {
		d := NewDecoder(fuzzMax)
		feed(b, d, split(data, func() int { return 1 }))
		d = NewDecoder(fuzzMax)
		feed(b, d, split(data, chunker(data)))
	}
}
