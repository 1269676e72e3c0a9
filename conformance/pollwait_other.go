//go:build !linux

package conformance

import "errors"

// threadWaiters needs Linux's /proc and process_vm_readv.
func threadWaiters(pids []int, inodes map[string]bool) (map[string]threadWaits, error) {
	return nil, errors.New("threads waiting in poll, select or accept are read from Linux's /proc")
}

// sameFile needs Linux's kcmp.
func sameFile(pid1, fd1, pid2, fd2 int) (bool, error) {
	if pid1 == pid2 && fd1 == fd2 {
		return true, nil
	}
	return false, errors.New("descriptors are compared with Linux's kcmp")
}
