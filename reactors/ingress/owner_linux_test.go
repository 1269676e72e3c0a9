//go:build linux

package ingress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// protocol is how the test owner loop uses the queue. Only protoCorrect is the
// contract; the others are the lost-wakeup bugs the package doc warns about,
// kept here to prove that the detector in runOwner detects.
type protocol int

const (
	// protoCorrect: Acknowledge when readable → Drain → timeout 0 while pending.
	protoCorrect protocol = iota
	// protoIgnorePending: drains one budget and then blocks regardless of pending.
	protoIgnorePending
	// protoAckAfterDrain: Drain first, Acknowledge after (clears the flag late).
	protoAckAfterDrain
)

func (p protocol) String() string {
	switch p {
	case protoCorrect:
		return "correct"
	case protoIgnorePending:
		return "ignore-pending"
	case protoAckAfterDrain:
		return "ack-after-drain"
	}
	return "protocol(" + strconv.Itoa(int(p)) + ")"
}

// ownerConfig describes one owner loop run.
type ownerConfig struct {
	q      *Queue[item]
	edge   bool // register with EPOLLET
	proto  protocol
	budget int
	total  int           // items to deliver before the loop returns
	sleep  time.Duration // timeout of a blocking epoll_wait
	// pushed returns how many Push calls have returned true so far (evidence).
	pushed func() int
	// check is called for each delivered item; an error stops the loop.
	check func(item) error
	// afterDrain, if set, runs once per round right after Drain: a hook to put a
	// push deterministically into the window the wrong protocols leave open.
	afterDrain func()
}

// ownerStats is what one owner loop run observed.
type ownerStats struct {
	delivered    int
	waits        int // epoll_wait calls
	blocking     int // epoll_wait calls with a non-zero timeout: the loop went to sleep
	zeroWaits    int // epoll_wait calls with timeout 0 because Drain reported pending
	wakeups      int // waits that reported the eventfd readable
	ctxSwitches  int // voluntary context switches of the owner's OS thread (kernel's count)
	maxDepth     int // largest Len seen after a wait
	wallDuration time.Duration
}

// lostWakeupError is the evidence a lost wakeup leaves: the owner blocked for
// the whole timeout while items whose Push had returned true were undelivered.
type lostWakeupError struct {
	proto                  protocol
	waited                 time.Duration
	pushedBeforeWait       int
	pushed, delivered, len int
}

func (e *lostWakeupError) Error() string {
	return fmt.Sprintf("lost wakeup (%v): epoll_wait slept %v with work owed: pushed %d (%d before the wait), delivered %d, queue Len %d",
		e.proto, e.waited, e.pushed, e.pushedBeforeWait, e.delivered, e.len)
}

// runOwner is an owner loop as a reactor runs it, reduced to its ingress: on a
// locked OS thread, with its own epoll fd holding the queue's eventfd, it waits,
// acknowledges, drains under a budget, and blocks only when Drain reported no
// pending work. It returns when cfg.total items were delivered, or with an
// error. A blocking wait that times out while items are owed is reported as a
// *lostWakeupError: the loop never waits forever, so a lost wakeup fails a test
// instead of hanging it.
func runOwner(cfg ownerConfig) (st ownerStats, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	begin := time.Now()
	sw0, swErr := voluntarySwitches()
	defer func() {
		st.wallDuration = time.Since(begin)
		if sw1, err1 := voluntarySwitches(); swErr == nil && err1 == nil {
			st.ctxSwitches = sw1 - sw0
		}
	}()

	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return st, os.NewSyscallError("epoll_create1", err)
	}
	defer unix.Close(epfd)
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(cfg.q.Fd())}
	if cfg.edge {
		ev.Events |= unix.EPOLLET
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, cfg.q.Fd(), &ev); err != nil {
		return st, os.NewSyscallError("epoll_ctl add", err)
	}

	var checkErr error
	deliver := func(v item) {
		if checkErr == nil {
			checkErr = cfg.check(v)
		}
		st.delivered++
	}
	events := make([]unix.EpollEvent, 4)
	sleepMs := int(cfg.sleep / time.Millisecond)
	pending := false
	for st.delivered < cfg.total {
		timeout := sleepMs
		if pending {
			timeout = 0
		}
		pushedBefore := cfg.pushed()
		waitStart := time.Now()
		n, err := unix.EpollWait(epfd, events, timeout)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return st, os.NewSyscallError("epoll_wait", err)
		}
		st.waits++
		if timeout == 0 {
			st.zeroWaits++
		} else {
			st.blocking++
		}
		if n == 0 && timeout != 0 {
			return st, &lostWakeupError{
				proto: cfg.proto, waited: time.Since(waitStart), pushedBeforeWait: pushedBefore,
				pushed: cfg.pushed(), delivered: st.delivered, len: cfg.q.Len(),
			}
		}
		readable := n > 0 // the eventfd is the only registered fd
		if readable {
			st.wakeups++
		}
		st.maxDepth = max(st.maxDepth, cfg.q.Len())

		switch cfg.proto {
		case protoCorrect:
			if readable {
				cfg.q.Acknowledge()
			}
			_, pending = cfg.q.Drain(cfg.budget, deliver)
			if cfg.afterDrain != nil {
				cfg.afterDrain()
			}
		case protoIgnorePending:
			if readable {
				cfg.q.Acknowledge()
			}
			cfg.q.Drain(cfg.budget, deliver)
			if cfg.afterDrain != nil {
				cfg.afterDrain()
			}
			pending = false // the bug: a spent budget is not treated as ready work
		case protoAckAfterDrain:
			_, pending = cfg.q.Drain(cfg.budget, deliver)
			if cfg.afterDrain != nil {
				cfg.afterDrain()
			}
			if readable {
				cfg.q.Acknowledge() // the bug: the flag is cleared after the look
			}
		}
		if checkErr != nil {
			return st, checkErr
		}
	}
	return st, nil
}

// voluntarySwitches reads the calling thread's voluntary context switch count:
// each time the owner really slept in epoll_wait, the kernel counted one.
func voluntarySwitches() (int, error) {
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("voluntary_ctxt_switches:")); ok {
			return strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	return 0, errors.New("voluntary_ctxt_switches not in /proc/thread-self/status")
}
