//go:build linux && !amd64

package diagnose

// legacyWaitCalls is empty: the newer architectures have only
// epoll_pwait, ppoll and pselect6.
var legacyWaitCalls = map[int]waitCall{}

// legacyCallNames is empty there too.
var legacyCallNames = map[int]string{}
