package loadgen

import (
	"encoding/binary"
	"sync"
)

// fillPattern writes wire.FillPattern(p, token, seq) into p, 32 bytes at a
// time, and returns digest(p) computed on the way.
//
// FillPattern's generator is xorshift64, whose step is linear over GF(2)^64:
// each output byte, and the state 32 steps on, are XORs of contributions of
// the sixteen nibbles of the seed. Tables of those contributions (patternTab:
// the 32 output bytes of a block and the state after it) turn
// the 32 dependent steps of a block into 16 independent table lookups (one
// per 4-bit nibble of the state: 10 KiB of tables, which stay in the L1
// cache), several times faster than stepping. TestFillPatternMatchesWire checks the output against
// wire.FillPattern byte for byte.
func fillPattern(p []byte, token, seq uint64) uint64 {
	patternOnce.Do(buildPatternTables)
	x := token*0x9E3779B97F4A7C15 ^ seq*0xBF58476D1CE4E5B9 ^ 0x94D049BB133111EB
	h := uint64(len(p)) * 0x9e3779b97f4a7c15
	for len(p) > 0 {
		// Unrolled: 16 independent lookups, one per nibble of x.
		t := &patternTab[0][x&15]
		w0, w1, w2, w3, next := t[0], t[1], t[2], t[3], t[4]
		t = &patternTab[1][(x>>4)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[2][(x>>8)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[3][(x>>12)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[4][(x>>16)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[5][(x>>20)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[6][(x>>24)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[7][(x>>28)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[8][(x>>32)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[9][(x>>36)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[10][(x>>40)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[11][(x>>44)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[12][(x>>48)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[13][(x>>52)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[14][(x>>56)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		t = &patternTab[15][(x>>60)&15]
		w0, w1, w2, w3, next = w0^t[0], w1^t[1], w2^t[2], w3^t[3], next^t[4]
		w := [4]uint64{w0, w1, w2, w3}
		x = next
		if len(p) >= 32 {
			binary.LittleEndian.PutUint64(p[0:], w[0])
			binary.LittleEndian.PutUint64(p[8:], w[1])
			binary.LittleEndian.PutUint64(p[16:], w[2])
			binary.LittleEndian.PutUint64(p[24:], w[3])
			h = mix(h ^ w[0])
			h = mix(h ^ w[1])
			h = mix(h ^ w[2])
			h = mix(h ^ w[3])
			p = p[32:]
			continue
		}
		// The tail: a prefix of the block's bytes (byte i of a block depends
		// only on the steps up to i).
		var block [32]byte
		binary.LittleEndian.PutUint64(block[0:], w[0])
		binary.LittleEndian.PutUint64(block[8:], w[1])
		binary.LittleEndian.PutUint64(block[16:], w[2])
		binary.LittleEndian.PutUint64(block[24:], w[3])
		n := copy(p, block[:])
		for i := 0; i < n; i += 8 {
			var t [8]byte
			copy(t[:], block[i:n])
			h = mix(h ^ binary.LittleEndian.Uint64(t[:]))
		}
		p = p[n:]
	}
	return h
}

var (
	patternOnce sync.Once
	// patternTab[j][b][0:4] is the 32 output bytes (as 4 little-endian
	// words) of a block seeded with b in nibble j and zeros elsewhere, and
	// patternTab[j][b][4] the state after the 32 steps of that block.
	patternTab [16][16][5]uint64
)

func buildPatternTables() {
	for j := range 16 {
		for b := range 16 {
			x := uint64(b) << (4 * j)
			var out [32]byte
			for i := range out {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				out[i] = byte(x)
			}
			for w := range 4 {
				patternTab[j][b][w] = binary.LittleEndian.Uint64(out[8*w:])
			}
			patternTab[j][b][4] = x
		}
	}
}
