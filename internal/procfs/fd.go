package procfs

import (
	"os"
	"slices"
	"strconv"
	"strings"
)

// Fd is one entry of a process's descriptor table, /proc/PID/fd: the
// descriptor and what its link names ("socket:[123]",
// "anon_inode:[eventpoll]", a path).
type Fd struct {
	Num int
	// Target is the link's target; "" when the descriptor was closed
	// between the listing and the read of its link (the listing's own
	// descriptor, when a process reads its own table, always is).
	Target string
}

// EpollTarget is what /proc/PID/fd/N links to when N is an epoll
// instance.
const EpollTarget = "anon_inode:[eventpoll]"

// EventfdTarget is what /proc/PID/fd/N links to when N is an eventfd.
const EventfdTarget = "anon_inode:[eventfd]"

// SocketInode is the inode of the socket f refers to, from its link's
// target "socket:[N]" (the inode inet_diag and an epoll item's Ino name);
// false when f is no socket.
func (f Fd) SocketInode() (uint64, bool) {
	n, ok := strings.CutPrefix(f.Target, "socket:[")
	if !ok {
		return 0, false
	}
	n, ok = strings.CutSuffix(n, "]")
	if !ok {
		return 0, false
	}
	ino, err := strconv.ParseUint(n, 10, 64)
	return ino, err == nil
}

// FdPath is /proc/PID/fd/FD, the link to descriptor fd of process pid.
func FdPath(pid, fd int) string { return Dir(pid) + "/fd/" + strconv.Itoa(fd) }

// Fds lists the descriptors of process pid (Self for the caller), in
// numeric order, without their targets; the caller's own listing
// descriptor is among them when pid is the caller.
func Fds(pid int) ([]int, error) {
	fds, err := numbered(Dir(pid) + "/fd")
	slices.Sort(fds)
	return fds, err
}

// CountFds counts the entries of /proc/PID/fd: the process's open
// descriptors (with the listing's own, when pid is the caller).
func CountFds(pid int) (int, error) {
	names, err := readNames(Dir(pid) + "/fd")
	return len(names), err
}

// ReadFds lists the descriptor table of process pid (Self for the
// caller), in numeric order, each descriptor with its link's target (""
// for one closed meanwhile). The error is the listing's; a link that cannot
// be read is not an error.
func ReadFds(pid int) ([]Fd, error) {
	nums, err := Fds(pid)
	if err != nil {
		return nil, err
	}
	out := make([]Fd, 0, len(nums))
	for _, n := range nums {
		t, _ := os.Readlink(FdPath(pid, n))
		out = append(out, Fd{Num: n, Target: t})
	}
	return out, nil
}

// EpollItem is one "tfd:" line of an epoll descriptor's
// /proc/PID/fdinfo/FD: a descriptor in the epoll set, with the events it
// was registered for and the inode of the file it refers to.
type EpollItem struct {
	Fd     int    // tfd: the descriptor, in the process that added it
	Events uint32 // events: the registered mask (EPOLLIN, EPOLLET, EPOLLEXCLUSIVE, …), hex in the file
	Data   uint64 // data: the registration's epoll_data, hex in the file
	Ino    uint64 // ino: the file's inode, hex in the file; a socket's is the N of "socket:[N]"
}

// epollExclusive is EPOLLEXCLUSIVE of linux/eventpoll.h (Linux 4.5).
const epollExclusive = 1 << 28

// Exclusive says whether the item was registered EPOLLEXCLUSIVE: of the
// instances holding a file so, the kernel wakes one per event, after
// every instance holding it without.
func (it EpollItem) Exclusive() bool { return it.Events&epollExclusive != 0 }

// ParseEpollItems reads the items of an epoll descriptor's fdinfo. Lines
// other than "tfd:" ones (pos, flags, mnt_id, ino of the epoll file itself)
// are skipped; a tfd line must carry a decimal tfd and hex events and ino
// (and data, if it has it).
func ParseEpollItems(b []byte) ([]EpollItem, error) {
	const file = "fdinfo"
	var out []EpollItem
	n := 0
	for line := range strings.Lines(string(b)) {
		n++
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "tfd:" {
			continue
		}
		field := "line " + strconv.Itoa(n)
		var it EpollItem
		var err error
		if it.Fd, err = strconv.Atoi(f[1]); err != nil {
			return nil, badValue(file, field+" tfd", err)
		}
		var events, ino bool
		for i := 2; i < len(f); i++ {
			key, val := f[i], ""
			if k, v, ok := strings.Cut(key, ":"); ok && v != "" {
				key, val = k+":", v // "pos:0", "ino:2d": value in the same field
			} else if i+1 < len(f) {
				val = f[i+1] // "events: 19": value in the next
				i++
			}
			switch key {
			case "events:":
				var v uint64
				v, err = strconv.ParseUint(val, 16, 32)
				it.Events, events = uint32(v), true
			case "data:":
				it.Data, err = strconv.ParseUint(val, 16, 64)
			case "ino:":
				it.Ino, err = strconv.ParseUint(val, 16, 64)
				ino = true
			}
			if err != nil {
				return nil, badValue(file, field+" "+strings.TrimSuffix(key, ":"), err)
			}
		}
		if !events || !ino {
			return nil, bad(file, field, "a tfd line without events: or ino: (%q)", strings.TrimSpace(line))
		}
		out = append(out, it)
	}
	return out, nil
}

// ReadEpollItems reads /proc/PID/fdinfo/FD of an epoll descriptor and its
// items (none, for a descriptor that is not an epoll instance).
func ReadEpollItems(pid, fd int) ([]EpollItem, error) {
	return read(Dir(pid)+"/fdinfo/"+strconv.Itoa(fd), ParseEpollItems)
}
