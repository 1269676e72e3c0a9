//go:build linux && amd64

package cases

import "golang.org/x/sys/unix"

// legacyPollSyscalls are poll and select, which amd64 has beside ppoll
// and pselect6.
var legacyPollSyscalls = map[int]pollShape{unix.SYS_POLL: pollArray, unix.SYS_SELECT: selectSet}
