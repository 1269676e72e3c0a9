//go:build !linux

package cases

import "errors"

// threadWaiters needs Linux's /proc and process_vm_readv.
func threadWaiters(pids []int, inodes map[uint64]bool) (map[uint64]threadWaits, error) {
	return nil, errors.New("threads waiting in poll, select or accept are read from Linux's /proc")
}
