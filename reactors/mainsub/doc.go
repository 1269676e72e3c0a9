// Package mainsub is the main/sub reactor reference design: one acceptor
// loop and Config.Loops sub-loops, each on its own thread and epoll set.
// The acceptor accepts every data connection and hands it to one sub-loop
// through that loop's ingress (round-robin, least-conns or least-loaded:
// Config.Assign); the sub-loop registers it itself and owns it for its
// whole life, serving it with lt's flat, level-triggered policy. Offloaded
// results come back to the owning sub-loop with the connection's
// generation. A full sub-loop ingress never loses a connection: the
// acceptor tries the others, then keeps it and retries every round. The
// acceptor also serves the control connections.
package mainsub
