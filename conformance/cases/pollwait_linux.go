//go:build linux

package cases

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"unsafe"

	"github.com/reactorlab/reactorlab/internal/procfs"
	"golang.org/x/sys/unix"
)

// pollShape is how a thread blocked in a system call names the
// descriptors it waits on: an array of struct pollfd, a select read set,
// or the one listening socket of accept.
type pollShape int

const (
	pollArray  pollShape = iota + 1 // poll, ppoll: (struct pollfd *fds, nfds_t nfds, …)
	selectSet                       // select, pselect6: (int nfds, fd_set *readfds, …)
	acceptCall                      // accept, accept4: (int sockfd, …)
)

// waitSyscalls maps the system calls a thread can wait on a listener in,
// other than epoll's, to how they name it (legacyPollSyscalls adds poll
// and select where the architecture has them, acceptSyscalls accept and
// accept4).
var waitSyscalls = func() map[int]pollShape {
	m := map[int]pollShape{unix.SYS_PPOLL: pollArray, unix.SYS_PSELECT6: selectSet}
	for nr, shape := range legacyPollSyscalls {
		m[nr] = shape
	}
	for _, nr := range acceptSyscalls {
		m[nr] = acceptCall
	}
	return m
}()

// pollRdNorm is POLLRDNORM of asm-generic/poll.h, which x/sys does not
// export on every architecture.
const pollRdNorm = 0x40

// maxPollFds bounds the descriptor list read from a waiting thread: a
// larger one is read up to it (a listener beyond it is not seen).
const maxPollFds = 1 << 16

// threadWaiters counts, for each listening socket of inodes, the threads of pids blocked in poll, ppoll, select or
// pselect6 with that socket among the descriptors they wait to read
// (pollers: such a wait is never exclusive, the kernel wakes every one
// of them for each connection), and those blocked in accept or accept4
// on it (acceptors: queued exclusive, one woken a connection). It reads
// each thread's /proc/PID/task/TID/syscall (the call it is blocked in and
// its arguments; procfs.ReadTaskSyscall) and a poller's descriptor list from the process's memory
// (process_vm_readv). A thread that is running, gone, or in another call
// is not counted. The error, if any, says that a thread's call or a
// waiting thread's list could not be read (no permission to trace it):
// the counts are then a lower bound.
func threadWaiters(pids []int, inodes map[uint64]bool) (map[uint64]threadWaits, error) {
	out := map[uint64]threadWaits{}
	var firstErr error
	for _, pid := range pids {
		socks := listenerFds(pid, inodes)
		if len(socks) == 0 {
			continue // this process cannot wait on the listener
		}
		tids, _ := procfs.Tasks(pid)
		for _, tid := range tids {
			call, err := procfs.ReadTaskSyscall(pid, tid)
			if err != nil {
				if errors.Is(err, fs.ErrPermission) && firstErr == nil {
					firstErr = err // not ours to trace: what it waits in is unknown
				}
				continue // else gone meanwhile, or a line that did not parse
			}
			if !call.InCall {
				continue
			}
			nr, args := call.Nr, call.Args
			shape, ok := waitSyscalls[nr]
			if !ok {
				continue
			}
			if shape == acceptCall {
				if sock, ok := socks[int(int32(args[0]))]; ok {
					w := out[sock]
					w.acceptors++
					out[sock] = w
				}
				continue
			}
			fds, err := waitedFds(pid, shape, args)
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("thread %d of pid %d in system call %d: %w", tid, pid, nr, err)
				}
				continue
			}
			counted := map[uint64]bool{}
			for _, fd := range fds {
				if sock, ok := socks[fd]; ok && !counted[sock] {
					counted[sock] = true
					w := out[sock]
					w.pollers++
					out[sock] = w
				}
			}
		}
	}
	return out, firstErr
}

// waitedFds reads from pid's memory the descriptors a thread blocked in a
// call of shape waits to read: the pollfds asking for POLLIN or
// POLLRDNORM (negative ones are ignored by the kernel too), or the
// descriptors set in select's read set.
func waitedFds(pid int, shape pollShape, args [6]uint64) ([]int, error) {
	switch shape {
	case pollArray:
		ptr, n := args[0], min(args[1], maxPollFds)
		if ptr == 0 || n == 0 {
			return nil, nil
		}
		b, err := readRemote(pid, ptr, int(n)*8) // struct pollfd { int fd; short events, revents; }
		if err != nil {
			return nil, err
		}
		var fds []int
		for i := 0; i+8 <= len(b); i += 8 {
			fd := int32(binary.NativeEndian.Uint32(b[i:]))
			events := binary.NativeEndian.Uint16(b[i+4:])
			if fd >= 0 && events&(unix.POLLIN|pollRdNorm) != 0 {
				fds = append(fds, int(fd))
			}
		}
		return fds, nil
	case selectSet:
		nfds, ptr := min(args[0], maxPollFds), args[1]
		if ptr == 0 || nfds == 0 {
			return nil, nil
		}
		words := int(nfds+63) / 64 // fd_set is an array of longs
		b, err := readRemote(pid, ptr, words*8)
		if err != nil {
			return nil, err
		}
		var fds []int
		for fd := 0; fd < int(nfds); fd++ {
			word := binary.NativeEndian.Uint64(b[fd/64*8:])
			if word&(1<<(fd%64)) != 0 {
				fds = append(fds, fd)
			}
		}
		return fds, nil
	}
	return nil, fmt.Errorf("unknown call shape %d", shape)
}

// readRemote reads n bytes at addr in pid's memory.
func readRemote(pid int, addr uint64, n int) ([]byte, error) {
	b := make([]byte, n)
	local := []unix.Iovec{{Base: unsafe.SliceData(b)}}
	local[0].SetLen(n)
	got, err := unix.ProcessVMReadv(pid, local, []unix.RemoteIovec{{Base: uintptr(addr), Len: n}}, 0)
	if err != nil {
		return nil, os.NewSyscallError("process_vm_readv", err)
	}
	if got != n {
		return nil, fmt.Errorf("process_vm_readv: %d of %d bytes", got, n)
	}
	return b, nil
}
