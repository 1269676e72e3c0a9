package cases

import (
	"bytes"
	"strings"
	"testing"
)

// streamOf is n bytes of a frame pattern: no run of gapMatch bytes repeats.
func streamOf(n int) []byte {
	var b []byte
	for seq := uint64(0); len(b) < n; seq++ {
		b = append(b, dataFrame(1, seq, 1000)...)
	}
	return b[:n]
}

// What a byte echo's stream shows is said as it is, and bytes are named
// dropped only when the count is short and the bytes after the first
// difference are the stream further on.
func TestAccountStream(t *testing.T) {
	sent := streamOf(100_000)
	cut := func(parts ...[2]int) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, sent[p[0]:p[1]]...)
		}
		return b
	}
	reordered := bytes.Join([][]byte{sent[:5000], sent[6000:7000], sent[5000:6000], sent[7000:]}, nil)
	for _, tc := range []struct {
		name    string
		got     []byte
		dropped bool
		says    []string
		not     []string
	}{
		{name: "whole", got: sent, says: []string{"all 100000 bytes sent came back, in order"}},
		{name: "truncated", got: sent[:4000], says: []string{"96000 bytes missing after offset 4000", "received 4000 of 100000"}, not: []string{"dropped"}},
		{name: "one gap", got: cut([2]int{0, 3000}, [2]int{3500, 100_000}), dropped: true,
			says: []string{"500 bytes missing after offset 3000 (the server dropped the unwritten rest of a write?)", "received 99500 of 100000", "the stream from offset 3500 on", "1 gap(s), 500 bytes missing in all"}},
		{name: "two gaps and a short end", got: cut([2]int{0, 3000}, [2]int{3500, 9000}, [2]int{9100, 50_000}), dropped: true,
			says: []string{"500 bytes missing after offset 3000", "the 5500 bytes after the gap", "2 gap(s), 50600 bytes missing in all"}},
		// Too few bytes after the gap to show where they come from: a
		// count short, described, no cause named.
		{name: "gap then a crumb", got: cut([2]int{0, 3000}, [2]int{3500, 3510}), says: []string{"received 3010 of 100000 bytes sent; they match the stream sent up to offset 3000, and differ there"}, not: []string{"dropped"}},
		// Every byte came back, some out of order: the count is not
		// short, so nothing is named dropped.
		{name: "reordered", got: reordered, says: []string{"received 100000 of 100000 bytes sent; they match the stream sent up to offset 5000"}, not: []string{"dropped", "missing"}},
		{name: "garbage", got: append(bytes.Clone(sent[:10]), bytes.Repeat([]byte{0xAB}, 500)...), says: []string{"received 510 of 100000", "up to offset 10"}, not: []string{"dropped"}},
		{name: "more", got: append(bytes.Clone(sent), 1, 2, 3), says: []string{"received 100003 bytes, more than the 100000 sent"}},
	} {
		a := accountStream(sent, tc.got)
		text := a.String()
		if a.dropped() != tc.dropped {
			t.Errorf("%s: dropped %v, want %v (%s)", tc.name, a.dropped(), tc.dropped, text)
		}
		for _, s := range tc.says {
			if !strings.Contains(text, s) {
				t.Errorf("%s: %q does not say %q", tc.name, text, s)
			}
		}
		for _, s := range tc.not {
			if strings.Contains(text, s) {
				t.Errorf("%s: %q says %q", tc.name, text, s)
			}
		}
	}
}
