//go:build linux

package cases

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestStreamSeesResetAfterFIN: a server that writes back what it read,
// half-closes and closes 20 ms later without reading to the client's EOF
// sends its FIN first and its RST (for the client's bytes it never read)
// after: the stream must end in RST, which it sees only by writing and
// reading once more after the FIN (resetAfterFIN). A server that reads
// and discards to the client's EOF after its FIN ends the stream in FIN.
func TestStreamSeesResetAfterFIN(t *testing.T) {
	for _, tc := range []struct {
		name       string
		drainToEOF bool
		want       streamEnd
	}{
		{"close 20 ms after the FIN", false, endReset},
		{"read to the client's EOF", true, endEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			served := make(chan struct{})
			go func() {
				defer close(served)
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				buf := make([]byte, 64<<10)
				for read := 0; read < 256<<10; {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
					read += n
				}
				c.(*net.TCPConn).CloseWrite()
				if tc.drainToEOF {
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					io.Copy(io.Discard, c)
					return
				}
				time.Sleep(20 * time.Millisecond) // the client writes on meanwhile: unread at the close
			}()
			conn, err := dialSmall(ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			s := &termStream{name: "conn 1", token: 7000, conn: conn, progress: make(chan struct{}, 1),
				stopping: make(chan struct{}), wrote: make(chan struct{}), ended: make(chan struct{}), resume: make(chan struct{})}
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			go s.write()
			go s.read()
			<-s.ended
			conn.Close()
			<-served
			if s.end != tc.want {
				t.Fatalf("ended in %s (%v), want %s", s.end, s.endErr, tc.want)
			}
			if tc.want == endReset && !strings.Contains(s.endErr.Error(), "FIN, then RST") {
				t.Errorf("the reset is not said to follow the FIN: %v", s.endErr)
			}
		})
	}
}
