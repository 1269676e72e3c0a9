//go:build linux && amd64

package diagnose

import "golang.org/x/sys/unix"

// legacyWaitCalls are the waits amd64 has beside the newer ones:
// epoll_wait (its timeout the fourth argument), poll (the third) and
// select (behind a pointer).
var legacyWaitCalls = map[int]waitCall{
	unix.SYS_EPOLL_WAIT: {"epoll_wait", 3, true},
	unix.SYS_POLL:       {"poll", 2, false},
	unix.SYS_SELECT:     {"select", -1, false},
}

// legacyCallNames are amd64's calls a blocked loop is found in that the
// newer architectures lack.
var legacyCallNames = map[int]string{unix.SYS_ACCEPT: "accept", unix.SYS_PAUSE: "pause"}
