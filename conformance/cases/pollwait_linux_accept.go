//go:build linux && !386 && !s390x

package cases

import "golang.org/x/sys/unix"

// acceptSyscalls are the calls a thread blocks in to accept: accept and
// accept4.
var acceptSyscalls = []int{unix.SYS_ACCEPT, unix.SYS_ACCEPT4}
