package cases

import (
	"fmt"

	"github.com/reactorlab/reactorlab/internal/inetdiag"
)

// sockQueues are the kernel queues of one loopback connection, both ends,
// in bytes: unsent is written by the application but not yet acknowledged
// by the peer, unread is received but not yet read by the application.
type sockQueues struct {
	clientUnsent, clientUnread int64
	serverUnread, serverUnsent int64
	serverState                uint8
	// serverGone: the server's end is no longer in the kernel's tables
	// (closed, and everything it had to send acknowledged).
	serverGone bool
}

// kernel is everything the four queues hold.
func (q sockQueues) kernel() int64 {
	return q.clientUnsent + q.clientUnread + q.serverUnread + q.serverUnsent
}

// serverOpen reports whether the server's end is open in a state in which
// it can still hold echoes and deliver them: ESTABLISHED, or CLOSE_WAIT
// (it has the client's FIN, and has not closed or shut down its side).
// Closed (LAST_ACK, CLOSING, TIME_WAIT, gone) or half-closed by the server
// (FIN_WAIT1, FIN_WAIT2), it holds nothing it will still send: what the
// client did not get back by then was dropped, not held.
func (q sockQueues) serverOpen() bool {
	return !q.serverGone && (q.serverState == tcpEstablished || q.serverState == tcpCloseWait)
}

// outputBlocked: the server has unsent echoes in its send queue and the
// client has unread bytes: the path back to the client is backed up.
func (q sockQueues) outputBlocked() bool {
	return q.serverUnsent > 0 && q.clientUnread > 0
}

// finPassed reports whether a read of the server's has passed the
// client's FIN: its end sits in CLOSE_WAIT with nothing left unread (the
// FIN counts one byte of the unread queue until a read passes it), or has
// gone past it (LAST_ACK, CLOSING, TIME_WAIT, CLOSE: closed, or gone). In
// ESTABLISHED, FIN_WAIT1 or FIN_WAIT2 the FIN has not arrived. A read
// that returned data passes a FIN queued behind it too (Linux advances
// past the FIN in the same call when the buffer has room), and its
// application has not seen the end of the stream yet: see
// loaded.finRead.
func (q sockQueues) finPassed() bool {
	switch {
	case q.serverGone:
		return true
	case q.serverState == tcpCloseWait:
		return q.serverUnread == 0
	}
	return q.serverState != tcpEstablished && q.serverState != tcpFinWait1 && q.serverState != tcpFinWait2
}

// finAlone: the server's end is in CLOSE_WAIT with the FIN alone unread
// (every byte of data read): its next read can only return the end of the
// stream.
func (q sockQueues) finAlone() bool {
	return !q.serverGone && q.serverState == tcpCloseWait && q.serverUnread == 1
}

func (q sockQueues) String() string {
	if q.serverGone {
		return fmt.Sprintf("client unsent %d unread %d; the server's end is gone", q.clientUnsent, q.clientUnread)
	}
	return fmt.Sprintf("client unsent %d unread %d; server unread %d unsent %d (%s)", q.clientUnsent, q.clientUnread, q.serverUnread, q.serverUnsent, inetdiag.StateName(q.serverState))
}
