//go:build linux

package loadgen_test

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/wire"
)

// fakeWrite is one write a fake target makes: bytes to the connection of
// accept-order index conn.
type fakeWrite struct {
	conn int
	b    []byte
}

// mutator decides what a fake target answers to the n-th frame (from 0) on
// connection conn (accept order); frame is a copy, the mutator's to keep or
// change. nil means a plain echo.
type mutator func(conn, n int, h wire.Header, frame []byte) []fakeWrite

// fakeTarget is an in-test TCP server that echoes frames, except where its
// mutator says otherwise. It is closed at the end of the test.
type fakeTarget struct {
	ln     net.Listener
	mutate mutator
	mu     sync.Mutex
	conns  []*fakeConn
	wg     sync.WaitGroup
}

type fakeConn struct {
	mu sync.Mutex // serialises writes
	c  net.Conn
}

func startFake(t *testing.T, mutate mutator) *fakeTarget {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeTarget{ln: ln, mutate: mutate}
	f.wg.Go(f.accept)
	t.Cleanup(f.close)
	return f
}

func (f *fakeTarget) Addr() string { return f.ln.Addr().String() }

func (f *fakeTarget) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		i := len(f.conns)
		fc := &fakeConn{c: c}
		f.conns = append(f.conns, fc)
		f.mu.Unlock()
		f.wg.Go(func() { f.serve(i, fc) })
	}
}

func (f *fakeTarget) conn(i int) *fakeConn {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < len(f.conns) {
		return f.conns[i]
	}
	return nil
}

func (f *fakeTarget) serve(i int, fc *fakeConn) {
	dec := wire.NewDecoder(0)
	buf := make([]byte, 64<<10)
	n := 0
	for {
		k, err := fc.c.Read(buf)
		if k > 0 {
			dec.Write(buf[:k])
			for {
				h, p, ok, err := dec.Next()
				if err != nil || !ok {
					break
				}
				frame := wire.AppendFrame(nil, h.Kind, h.Flags, h.Token, h.Seq, h.SendNs, p)
				var writes []fakeWrite
				if f.mutate != nil && h.Kind == wire.KindData {
					writes = f.mutate(i, n, h, frame)
					n++
				} else {
					writes = []fakeWrite{{i, frame}}
				}
				for _, w := range writes {
					if to := f.conn(w.conn); to != nil {
						to.mu.Lock()
						to.c.Write(w.b)
						to.mu.Unlock()
					}
				}
			}
		}
		if err != nil {
			fc.c.Close()
			return
		}
	}
}

func (f *fakeTarget) close() {
	f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		c.c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// startByteEcho is a plain TCP byte echo, the simplest black-box target: it
// copies every byte back and closes a connection once the client's half is
// closed and everything is echoed.
func startByteEcho(t *testing.T) string {
	return serveEach(t, func(c net.Conn) {
		io.Copy(c, c)
		c.Close()
	})
}

// serveEach is ServeEach (serve_linux_test.go), for this package's
// black-box tests.
var serveEach = loadgen.ServeEach
