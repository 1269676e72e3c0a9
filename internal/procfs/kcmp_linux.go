package procfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// kcmpFile is KCMP_FILE of linux/kcmp.h: compare two descriptors' open
// files.
const kcmpFile = 0

// SameFile says whether descriptor fd1 of pid1 and fd2 of pid2 refer to
// one open file description (one epoll instance, for epoll descriptors: a
// descriptor dup'd or inherited across fork is the same), by kcmp(2),
// which needs leave to trace both processes. A descriptor is the same as
// itself without asking the kernel.
func SameFile(pid1, fd1, pid2, fd2 int) (bool, error) {
	if pid1 == pid2 && fd1 == fd2 {
		return true, nil
	}
	r, _, errno := unix.Syscall6(unix.SYS_KCMP, uintptr(pid1), uintptr(pid2), kcmpFile, uintptr(fd1), uintptr(fd2), 0)
	if errno != 0 {
		return false, os.NewSyscallError("kcmp", errno)
	}
	return r == 0, nil
}
