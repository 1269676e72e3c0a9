//go:build linux && (386 || s390x)

package cases

import "golang.org/x/sys/unix"

// acceptSyscalls is accept4 alone: these architectures reach accept
// through socketcall, which is not looked for.
var acceptSyscalls = []int{unix.SYS_ACCEPT4}
