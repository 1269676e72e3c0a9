// Package reuseport is the SO_REUSEPORT reference design: Config.Loops
// loops, each on its own thread and epoll set with a data listener of its
// own, all bound to one address with SO_REUSEPORT, so the kernel's flow
// hash picks the loop of each connection and no loop waits on another's
// listener. Each loop serves its connections with lt's flat,
// level-triggered policy; loop 0 also serves the control connections.
package reuseport
