//go:build linux

package inetdiag

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDumpInfoCountsSegments: DumpInfo reads each socket's tcpi_segs_in
// and tcpi_bytes_received, and a connection's receiving end counts at
// least one segment per write its peer made and waited out (each write
// pushed alone) and exactly the bytes written; Dump asks for no tcp_info
// and says so.
func TestDumpInfoCountsSegments(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	segs := func() (Socket, bool) {
		socks, err := DumpInfo(unix.AF_INET)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range socks {
			if k.Local.String() == s.LocalAddr().String() && k.Remote.String() == s.RemoteAddr().String() {
				return k, true
			}
		}
		return Socket{}, false
	}
	before, ok := segs()
	if !ok || !before.HasInfo {
		t.Fatalf("the accepted end: found %v, tcp_info %v", ok, before.HasInfo)
	}
	const writes = 20
	buf := make([]byte, 64)
	for range writes {
		if _, err := c.Write([]byte("0123456789")); err != nil {
			t.Fatal(err)
		}
		s.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := s.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := segs()
	if got := after.SegsIn - before.SegsIn; got < writes {
		t.Errorf("%d segments in over %d writes, each read before the next; want ≥ %d", got, writes, writes)
	}
	if got := after.BytesReceived - before.BytesReceived; got != writes*10 {
		t.Errorf("%d bytes received over %d writes of 10 bytes; want %d", got, writes, writes*10)
	}
	plain, err := Dump(unix.AF_INET, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range plain {
		if k.HasInfo {
			t.Fatalf("Dump returned tcp_info for %v", k)
		}
	}
}
