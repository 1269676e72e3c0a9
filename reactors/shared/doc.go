// Package shared is the shared-listener reference design: Config.Loops
// loops, each on its own thread and epoll set, with one data listener
// registered in every set — EPOLLEXCLUSIVE unless Config.Exclusive is
// "off", so a connection wakes one waiting loop (or a few) rather than all
// of them. Whichever loop accepts a connection owns it for its whole life
// and serves it with lt's flat, level-triggered policy; loop 0 also serves
// the control connections. With exclusive off it is the thundering herd
// the multi-loop cases and the multiloop suite measure.
package shared
