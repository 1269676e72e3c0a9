//go:build linux

package conformance

// SetPickAddrs replaces how process targets pick their addresses, for a
// test that makes a port taken; it returns the restore.
func SetPickAddrs(pick func() (string, string, error)) (restore func()) {
	old := pickAddrs
	pickAddrs = pick
	return func() { pickAddrs = old }
}
