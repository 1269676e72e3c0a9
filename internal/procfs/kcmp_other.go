//go:build !linux

package procfs

import "errors"

// SameFile needs Linux's kcmp: a descriptor is the same as itself, and
// any other pair is an error.
func SameFile(pid1, fd1, pid2, fd2 int) (bool, error) {
	if pid1 == pid2 && fd1 == fd2 {
		return true, nil
	}
	return false, errors.New("descriptors are compared with Linux's kcmp")
}
