package main

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The echo loops of the --bug modes, each the mistake its mode names,
// written as real servers make it, the connection --arena wraps (a
// legitimate pooled allocator's first touch, not a bug) and --churn's
// churner (legitimate work on memory, not a busy loop).

// echoOverlapping is the overlapping-writes bug's echo: the reader never
// waits for a write. A read of overlapSmall bytes or more goes to one
// writer goroutine that writes such pieces in order, each to its end; a
// smaller read is written back by a goroutine of its own, one
// non-blocking write(2) at a time with 50 µs between tries. So a small
// piece pending behind a full socket races the others, and the stream is
// reordered once two are pending at once: only where the server's output
// backs up while it reads small pieces.
func echoOverlapping(c net.Conn) {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return
	}
	write := func(piece []byte) {
		for len(piece) > 0 {
			var k int
			var werr error
			if cerr := rc.Write(func(fd uintptr) bool {
				k, werr = syscall.Write(int(fd), piece)
				return true
			}); cerr != nil {
				return
			}
			if k > 0 {
				piece = piece[k:]
			}
			if werr != nil && werr != syscall.EAGAIN {
				return
			}
			if len(piece) > 0 {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}
	var writers sync.WaitGroup
	defer writers.Wait()
	large := make(chan []byte, 1<<16)
	writers.Add(1)
	go func() {
		defer writers.Done()
		for piece := range large {
			write(piece)
		}
	}()
	defer close(large)
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		switch {
		case n >= overlapSmall:
			large <- bytes.Clone(buf[:n])
		case n > 0:
			piece := bytes.Clone(buf[:n])
			writers.Add(1)
			go func() {
				defer writers.Done()
				write(piece)
			}()
		}
		if err != nil {
			return
		}
	}
}

// arenaConn is a connection whose first read of data makes the server
// take its arena (--arena).
type arenaConn struct {
	net.Conn
	s *server
}

func (a *arenaConn) Read(p []byte) (int, error) {
	n, err := a.Conn.Read(p)
	if n > 0 {
		a.s.arenaOnce.Do(func() {
			a.s.arena = make([]byte, a.s.arenaSize)
			for i := 0; i < len(a.s.arena); i += 4096 {
				a.s.arena[i] = 1 // touched: resident
			}
		})
	}
	return n, err
}

// churnEvery is how often --churn's churner allocates a fresh buffer.
const churnEvery = 10 * time.Millisecond

// churn allocates a fresh buffer of size bytes every churnEvery, touches
// every page of it and drops it, until done is closed. Between rounds it
// sleeps: its thread blocks.
func churn(size int, done <-chan struct{}) {
	t := time.NewTicker(churnEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		buf := make([]byte, size)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1 // touched: resident
		}
		churnSink.Store(&buf)
	}
}

// churnSink holds the last churned buffer, so that the compiler cannot
// drop the allocation.
var churnSink atomic.Pointer[[]byte]

// echoUnderLoopLock is the block-loop-on-full bug's echo: each read is
// written back while holding s.loop, the one lock every connection's
// writes take, for as long as the write blocks.
func (s *server) echoUnderLoopLock(c net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			s.loop.Lock()
			_, werr := c.Write(buf[:n])
			s.loop.Unlock()
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// overlapSmall is the size under which overlapping-writes writes a read
// back from a goroutine of its own.
const overlapSmall = 4 << 10

// echoDroppingRest is the drop-short-write bug's echo: each read is
// written back by one non-blocking write(2), and what it did not take is
// dropped.
func echoDroppingRest(c net.Conn) {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			var werr error
			if cerr := rc.Write(func(fd uintptr) bool {
				_, werr = syscall.Write(int(fd), buf[:n])
				return true // one try, whatever it took
			}); cerr != nil {
				return
			}
			if werr != nil && werr != syscall.EAGAIN {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// spin echoes with non-blocking reads retried at once, never waiting.
func spin(c net.Conn) {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 64<<10)
	for {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), buf)
			return true // done: never park on the poller
		}); err != nil {
			return
		}
		if rerr == syscall.EAGAIN || rerr == syscall.EINTR {
			continue
		}
		if rerr != nil || n == 0 {
			return
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
	}
}

// unbounded reads into a list of chunks that only grows; a writer drains it
// as fast as the client reads.
func unbounded(c net.Conn) {
	var mu sync.Mutex
	more := sync.NewCond(&mu)
	var pending net.Buffers
	eof := false
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		mu.Lock()
		defer mu.Unlock()
		for {
			for len(pending) == 0 && !eof {
				more.Wait()
			}
			if len(pending) == 0 {
				return
			}
			out := pending
			pending = nil
			mu.Unlock()
			_, err := out.WriteTo(c)
			mu.Lock()
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		mu.Lock()
		if n > 0 {
			pending = append(pending, bytes.Clone(buf[:n]))
		}
		eof = err != nil
		mu.Unlock()
		more.Signal()
		if err != nil {
			break
		}
	}
	<-wrote
}

// maxQueued bounds the bytes queued's reader holds for its writer.
const maxQueued = 4 << 20

// echoQueue is queued's bounded queue of chunks read and not yet written.
type echoQueue struct {
	mu      sync.Mutex
	changed sync.Cond // chunks, bytes, eof or failed changed
	chunks  [][]byte
	bytes   int  // in chunks
	eof     bool // the reader is done: no more chunks come
	failed  bool // a write failed (or the bug closed the connection): nothing more is written
}

// queued echoes c through a bounded user-space queue: this goroutine reads
// into it, waiting while maxQueued bytes are queued (backpressure), and a
// writer goroutine writes it out. At the reader's EOF (or read error) the
// writer writes everything still queued, then c is half-closed. With
// freeAtEOF (the free-at-eof bug) the reader closes c at its EOF at once
// instead, and the queued echoes are dropped. It returns once both
// goroutines are done; the caller closes c.
func queued(c net.Conn, freeAtEOF bool) {
	q := &echoQueue{}
	q.changed.L = &q.mu
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		q.write(c)
	}()
	buf := make([]byte, 64<<10)
	for {
		q.mu.Lock()
		for q.bytes >= maxQueued && !q.failed {
			q.changed.Wait()
		}
		failed := q.failed
		q.mu.Unlock()
		if failed {
			break
		}
		n, err := c.Read(buf)
		q.mu.Lock()
		if n > 0 {
			q.chunks = append(q.chunks, bytes.Clone(buf[:n]))
			q.bytes += n
		}
		q.eof = err != nil
		q.mu.Unlock()
		q.changed.Broadcast()
		if err == nil {
			continue
		}
		if freeAtEOF {
			// The bug: the peer is done sending, so the connection is freed
			// now; the writer's next write fails and what it had queued is lost.
			c.Close()
		}
		break
	}
	q.mu.Lock()
	q.eof = true
	q.mu.Unlock()
	q.changed.Broadcast()
	<-wrote
	if tc, ok := c.(*net.TCPConn); ok && !freeAtEOF {
		tc.CloseWrite() // every echo is out (or a write failed): say so
	}
}

// write writes q's chunks to c in order until the reader is done and the
// queue is empty, or a write fails.
func (q *echoQueue) write(c net.Conn) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		for len(q.chunks) == 0 && !q.eof {
			q.changed.Wait()
		}
		if len(q.chunks) == 0 {
			return
		}
		chunk := q.chunks[0]
		q.mu.Unlock()
		_, err := c.Write(chunk)
		q.mu.Lock()
		q.chunks[0] = nil
		q.chunks = q.chunks[1:]
		q.bytes -= len(chunk)
		if err != nil {
			q.failed = true
		}
		q.changed.Broadcast()
		if err != nil {
			return
		}
	}
}
