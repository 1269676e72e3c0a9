//go:build !linux

package outq

import (
	"errors"
	"os"
)

// Flush is implemented on Linux only; elsewhere it writes nothing and returns
// an error wrapping errors.ErrUnsupported, so that code using the queue still
// builds and vets.
func (q *Queue) Flush(fd int) (n int, blocked bool, err error) {
	return 0, false, os.NewSyscallError("write", errors.ErrUnsupported)
}
