//go:build linux && !amd64

package cases

// legacyPollSyscalls is empty: the newer architectures have only ppoll
// and pselect6 (386 and arm have poll and select too, not looked for).
var legacyPollSyscalls = map[int]pollShape{}
