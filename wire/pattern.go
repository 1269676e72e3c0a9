package wire

// FillPattern fills p with bytes derived from (token, seq) by a xorshift
// generator: a payload any client can check on the way back, so a frame
// delivered to the wrong connection (token), reordered or lost (seq), or
// corrupted (bytes) is detected. The same (token, seq, len) always gives
// the same bytes.
func FillPattern(p []byte, token, seq uint64) {
	x := token*0x9E3779B97F4A7C15 ^ seq*0xBF58476D1CE4E5B9 ^ 0x94D049BB133111EB
	for i := range p {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p[i] = byte(x)
	}
}
