package loadgen

import "encoding/binary"

// digest is a 64-bit digest of a payload, kept per outstanding frame so that
// an answer is checked against the wire.FillPattern bytes that were sent
// without generating them a second time (the pattern costs about 1.4 ns a
// byte, the digest a few ns a frame). Each 8-byte word (the tail zero-padded)
// goes through an invertible mixing step, so a change confined to one word
// always changes the digest; any other change goes unnoticed with
// probability about 2^-64. The length is mixed in first.
func digest(p []byte) uint64 {
	h := uint64(len(p)) * 0x9e3779b97f4a7c15
	for len(p) >= 8 {
		h = mix(h ^ binary.LittleEndian.Uint64(p))
		p = p[8:]
	}
	if len(p) > 0 {
		var t [8]byte
		copy(t[:], p)
		h = mix(h ^ binary.LittleEndian.Uint64(t[:]))
	}
	return h
}

// mix is a bijection of uint64: a multiplication by an odd constant and a
// xorshift, both invertible.
func mix(h uint64) uint64 {
	h *= 0xff51afd7ed558ccd
	return h ^ h>>33
}
