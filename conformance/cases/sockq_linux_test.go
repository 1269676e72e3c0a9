//go:build linux

package cases

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
)

// A sample of a connection's queues is of that connection's sockets and
// no other: here four connections share both ports (server port P, client
// port Q) on four pairs of loopback addresses, each server end holding a
// different number of unread bytes. The kernel's inet_diag filters by
// ports only, so a lookup that does not compare the addresses finds all
// four (the netlink library's SocketGet refused "multiple (4) matching
// sockets", or took the first).
func TestQueuesAreTheConnectionsOwn(t *testing.T) {
	const conns = 4
	var lns []net.Listener
	port := 0
	for i := range conns {
		ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(1+i)), Port: port})
		if err != nil {
			t.Skipf("cannot listen on a second loopback address with the same port (%v): needs Linux's 127.0.0.0/8 on lo", err)
		}
		defer ln.Close()
		port = ln.Addr().(*net.TCPAddr).Port
		lns = append(lns, ln)
	}
	var clients []*net.TCPConn
	var servers []net.Conn
	cport := 0
	for i, ln := range lns {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 2, byte(1+i)), Port: cport}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("dial %d from port %d: %v", i, cport, err)
		}
		defer c.Close()
		cport = c.LocalAddr().(*net.TCPAddr).Port
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		clients, servers = append(clients, c.(*net.TCPConn)), append(servers, s)
	}
	_ = servers // held open, never read: what each client writes stays unread
	var pins []*connQueues
	for i, c := range clients {
		cq, err := pinQueues(c)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		pins = append(pins, cq)
		if _, err := c.Write(make([]byte, 1000*(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	for i, cq := range pins {
		want := int64(1000 * (i + 1))
		var q sockQueues
		var err error
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if q, err = cq.sample(false); err == nil && q.serverUnread == want {
				break
			}
		}
		if err != nil {
			t.Fatalf("connection %d (%v→%v): %v", i, clients[i].LocalAddr(), clients[i].RemoteAddr(), err)
		}
		if q.serverUnread != want || q.serverState != tcpEstablished || q.serverGone {
			t.Errorf("connection %d (%v→%v): server end %v, want %d bytes unread in ESTABLISHED: another socket's sample", i, clients[i].LocalAddr(), clients[i].RemoteAddr(), q, want)
		}
	}
	// Once the server closes its end and the kernel is done with it, the
	// pinned sample says it is gone; it never finds another socket.
	servers[0].(*net.TCPConn).SetLinger(0)
	servers[0].Close()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s, ok, err := pins[0].server.Sample()
		if err == nil && !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the server reset connection 0, its sample is %+v (found %v, err %v), want its end gone", s, ok, err)
		}
	}
}

// The server's application has read the client's FIN as the end of the
// stream only on positive evidence: a read that returns data passes a FIN
// queued behind it too (CLOSE_WAIT, nothing unread) while the application
// has not seen the end, so that alone is no evidence; a FIN that arrived
// alone (the half-close after the server read everything, or seen alone
// in its queue) and was then passed is. A read of exactly the data's
// length is no evidence either: Linux keeps a FIN that came after the
// data in the data's buffer and passes it with the last byte.
func TestFINReadNeedsTheFINAlone(t *testing.T) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	open := func() (*loaded, *net.TCPConn) {
		t.Helper()
		client, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		server, err := ln.AcceptTCP()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { server.Close() })
		socks, err := pinQueues(client)
		if err != nil {
			t.Skipf("cannot see the connection's sockets: %v", err)
		}
		return &loaded{name: "conn", conn: client, socks: socks}, server
	}
	// until samples l until ok, for at most a second.
	until := func(l *loaded, what string, ok func(sockQueues) bool) {
		t.Helper()
		for deadline := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
			if err := l.sample(); err != nil {
				t.Fatal(err)
			}
			if ok(l.q) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not seen in 1 s (%v)", what, l.q)
			}
		}
	}
	buf := make([]byte, 16<<10)

	// Data and the FIN behind it, taken by one read that returns the data.
	l, server := open()
	if _, err := l.conn.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	var c conformance.C
	halfClose(&c, l)
	until(l, "the FIN behind the data", func(q sockQueues) bool { return q.serverState == tcpCloseWait && q.serverUnread == 1001 })
	if n, err := server.Read(buf); n != 1000 || err != nil {
		t.Fatalf("the server's read: %d, %v; want the 1000 bytes", n, err)
	}
	until(l, "the read past the FIN", func(q sockQueues) bool { return q.serverUnread == 0 })
	if !l.q.finPassed() || l.finRead() {
		t.Errorf("a read that returned data passed the FIN (%v): finPassed %v, finRead %v; want true, false", l.q, l.q.finPassed(), l.finRead())
	}

	// The FIN queued behind the data, the data read by a read of exactly
	// its length: Linux keeps a FIN that came after the data in the data's
	// buffer and passes it with the last byte, so this is no evidence
	// either.
	l, server = open()
	if _, err := l.conn.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	until(l, "the data queued", func(q sockQueues) bool { return q.serverUnread == 1000 })
	halfClose(&c, l)
	until(l, "the FIN behind the data", func(q sockQueues) bool { return q.serverUnread == 1001 })
	if n, err := io.ReadFull(server, buf[:1000]); n != 1000 || err != nil {
		t.Fatalf("the server's read of the data: %d, %v", n, err)
	}
	until(l, "the data read", func(q sockQueues) bool { return q.serverUnread <= 1 })
	if l.finRead() {
		t.Errorf("a read of exactly the data (%v): finRead true", l.q)
	}

	// The data read first, then the FIN alone, then its read.
	l, server = open()
	if _, err := l.conn.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	if n, err := server.Read(buf); n != 1000 || err != nil {
		t.Fatalf("the server's read: %d, %v; want the 1000 bytes", n, err)
	}
	until(l, "everything read", func(q sockQueues) bool { return q.serverUnread == 0 && q.clientUnsent == 0 })
	halfClose(&c, l)
	if !l.finAlone {
		t.Fatalf("half-closed with everything read (%v): the FIN must arrive alone", l.q)
	}
	// As if the half-close had been made on an older sample: the FIN is
	// seen alone in the queue, and that is the evidence.
	l.finAlone = false
	until(l, "the FIN alone", func(q sockQueues) bool { return q.finAlone() })
	if l.finRead() {
		t.Errorf("the FIN alone, unread (%v): finRead true", l.q)
	}
	if n, err := server.Read(buf); n != 0 || err == nil {
		t.Fatalf("the server's read after the FIN: %d, %v; want the end of the stream", n, err)
	}
	until(l, "the read of the FIN", func(q sockQueues) bool { return q.serverUnread == 0 })
	if !l.finRead() {
		t.Errorf("the FIN read alone (%v): finRead false", l.q)
	}
}
