//go:build linux

package conformance

import (
	"net"
	"testing"
	"time"
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
