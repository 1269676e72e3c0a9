//go:build linux

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// interrupt is closed by the first SIGINT or SIGTERM, after which the
// signals' default action (ending the process) is restored.
type interrupt struct {
	c    chan struct{}
	sigs chan os.Signal
	end  chan struct{}
	done chan struct{}
}

// onInterrupt catches SIGINT and SIGTERM until stop.
func onInterrupt() *interrupt {
	i := &interrupt{c: make(chan struct{}), sigs: make(chan os.Signal, 1), end: make(chan struct{}), done: make(chan struct{})}
	signal.Notify(i.sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		defer close(i.done)
		select {
		case <-i.sigs:
			signal.Stop(i.sigs)
			close(i.c)
		case <-i.end:
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
