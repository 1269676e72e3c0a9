//go:build linux

package diagnose

import "testing"

// TestNeverRead: a look counts for a connection only when it and the look
// before found the same connection (its cookie) readable with the same
// bytes read; a connection read between two looks, or another connection
// under the same inode, does not count.
func TestNeverRead(t *testing.T) {
	at := func(cookie uint64, unread uint32, consumed uint64) readableSocket {
		return readableSocket{cookie: cookie, fd: 8, ends: "127.0.0.1:9000→127.0.0.1:41000", unread: unread, consumed: consumed}
	}
	look := func(socks map[uint64]readableSocket) lookResult { return lookResult{readable: socks} }
	for _, c := range []struct {
		name   string
		looks  []lookResult
		want   int
		unread int64
	}{
		{"never read in 4 looks", []lookResult{
			look(map[uint64]readableSocket{1: at(7, 4096, 0)}), look(map[uint64]readableSocket{1: at(7, 4096, 0)}),
			look(map[uint64]readableSocket{1: at(7, 8192, 0)}), look(map[uint64]readableSocket{1: at(7, 8192, 0)}),
		}, 3, 8192},
		{"read between each two looks, bytes always waiting", []lookResult{
			look(map[uint64]readableSocket{1: at(7, 4096, 0)}), look(map[uint64]readableSocket{1: at(7, 4096, 65536)}),
			look(map[uint64]readableSocket{1: at(7, 4096, 131072)}),
		}, 0, 0},
		{"another connection under the same inode", []lookResult{
			look(map[uint64]readableSocket{1: at(7, 4096, 0)}), look(map[uint64]readableSocket{1: at(8, 4096, 0)}),
		}, 0, 0},
		{"not readable at the look before", []lookResult{
			look(map[uint64]readableSocket{}), look(map[uint64]readableSocket{1: at(7, 4096, 0)}),
			look(map[uint64]readableSocket{}), look(map[uint64]readableSocket{1: at(7, 4096, 0)}),
		}, 0, 0},
	} {
		n, got := neverRead(c.looks)
		if n != c.want || (got == nil) != (c.want == 0) || got != nil && got.Unread != c.unread {
			t.Errorf("%s: %d looks, %+v; want %d looks, %d bytes unread", c.name, n, got, c.want, c.unread)
		}
	}
}
