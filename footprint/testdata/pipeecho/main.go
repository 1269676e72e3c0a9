// Command pipeecho is a byte-echo server for footprint's tests that holds
// three descriptors per connection, as a server that splices through a
// pipe does: the socket and a pipe pair, the echo passing through the
// pipe. It listens on $REACTORLAB_LISTEN and makes each connection's pipe
// before it accepts the connection; when either fails (EMFILE, its
// descriptor table full) it waits and tries again, as many servers do,
// leaving the next connection unanswered in the accept queue. With -mute
// it reads and never answers.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	mute := flag.Bool("mute", false, "read every connection and never answer")
	flag.Parse()
	ln, err := net.Listen("tcp", os.Getenv("REACTORLAB_LISTEN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "pipeecho:", err)
		os.Exit(1)
	}
	for {
		r, w, err := os.Pipe()
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		c, err := ln.Accept()
		for err != nil {
			time.Sleep(10 * time.Millisecond)
			c, err = ln.Accept()
		}
		go serve(c, r, w, *mute)
	}
}

// serve copies c into the pipe's write end and the pipe's read end back
// into c, or, muted, reads c and drops what it reads. The copies are plain
// read and write loops: io.Copy would splice, through pipes of its own.
func serve(c net.Conn, r, w *os.File, mute bool) {
	defer c.Close()
	defer r.Close()
	defer w.Close()
	if mute {
		copyLoop(io.Discard, c)
		return
	}
	go copyLoop(c, r)
	copyLoop(w, c)
}

// copyLoop copies src to dst until either fails.
func copyLoop(dst io.Writer, src io.Reader) {
	buf := make([]byte, 4096)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
