//go:build linux

package main

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// interrupt is closed by the first SIGINT or SIGTERM. A later one, once
// duplicateWithin has passed, ends the process at once by the signal's
// default action; one sooner is the same interrupt delivered twice and
// changes nothing.
type interrupt struct {
	c    chan struct{}
	sigs chan os.Signal
	end  chan struct{}
	done chan struct{}
}

// duplicateWithin is how soon after the first signal another one counts as
// the same interrupt delivered twice, not a person asking again: GNU
// timeout signals its child and then the child's process group, and a
// terminal's Ctrl-C reaches every process of its foreground group, some of
// which may pass it on. A person's second Ctrl-C comes later than that.
const duplicateWithin = time.Second

// onInterrupt catches SIGINT and SIGTERM until stop.
func onInterrupt() *interrupt {
	i := &interrupt{c: make(chan struct{}), sigs: make(chan os.Signal, 4), end: make(chan struct{}), done: make(chan struct{})}
	signal.Notify(i.sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		defer close(i.done)
		var first time.Time
		select {
		case <-i.sigs:
			first = time.Now()
			close(i.c)
		case <-i.end:
			return
		}
		for {
			select {
			case sig := <-i.sigs:
				if time.Since(first) < duplicateWithin {
					continue
				}
				// Asked again: end now, as the signal's default action
				// would have (the lab dies with this process).
				signal.Stop(i.sigs)
				if s, ok := sig.(syscall.Signal); ok {
					syscall.Kill(os.Getpid(), s)
				}
				return
			case <-i.end:
				return
			}
		}
	}()
	return i
}

// happened reports whether a signal came.
func (i *interrupt) happened() bool {
	select {
	case <-i.c:
		return true
	default:
		return false
	}
}

// stop stops catching the signals and ends the goroutine.
func (i *interrupt) stop() {
	signal.Stop(i.sigs)
	close(i.end)
	<-i.done
}
