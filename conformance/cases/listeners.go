package cases

import (
	"errors"
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/internal/procfs"
)

// listenerFds maps pid's descriptors that are one of the sockets of
// inodes to that socket's inode.
func listenerFds(pid int, inodes map[uint64]bool) map[int]uint64 {
	out := map[int]uint64{}
	fds, _ := procfs.ReadFds(pid)
	for _, f := range fds {
		if ino, ok := f.SocketInode(); ok && inodes[ino] {
			out[f.Num] = ino
		}
	}
	return out
}

// listenerWaits is who waits to accept on one listening socket: the
// epoll instances holding it without EPOLLEXCLUSIVE (plain) and with it
// (exclusive), each counted once however many descriptors, in however
// many processes, refer to it; the threads blocked in poll, ppoll,
// select or pselect6 with it among what they wait to read (pollers); and
// the threads blocked in accept or accept4 on it (acceptors). For each
// connection the kernel wakes every plain instance's waiter and every
// poller, then one exclusive waiter: an exclusive instance's or an
// acceptor (their waits are queued exclusive, behind the others).
type listenerWaits struct {
	plain, exclusive, pollers, acceptors int
	// kcmpErr, when not nil, says epoll descriptors could not be compared
	// (kcmp): each was counted as an instance of its own.
	kcmpErr error
}

// sharers is how many waiters the kernel wakes for every connection to
// the socket: the plain instances', the pollers and, if there is any,
// one exclusive waiter.
func (w listenerWaits) sharers() int {
	n := w.plain + w.pollers
	if w.exclusive+w.acceptors > 0 {
		n++
	}
	return n
}

// any says that something is seen waiting on the socket.
func (w listenerWaits) any() bool { return w.plain+w.exclusive+w.pollers+w.acceptors > 0 }

// String reads, e.g., "a listening socket is in 2 epoll sets without
// EPOLLEXCLUSIVE and 0 with it, 0 threads wait on it in poll or select and
// 0 in accept (2 waiters woken for every connection)".
func (w listenerWaits) String() string {
	s := fmt.Sprintf("a listening socket is in %d epoll sets without EPOLLEXCLUSIVE and %d with it, %d threads wait on it in poll or select and %d in accept (%d waiters woken for every connection, the socket with the most)", w.plain, w.exclusive, w.pollers, w.acceptors, w.sharers())
	if w.kcmpErr != nil {
		s += fmt.Sprintf("; epoll descriptors could not be compared (%v): each is counted as a set of its own", w.kcmpErr)
	}
	return s
}

// pollSamples is how many times listenerWaiters looks for threads
// blocked in poll, select or accept, pollSampleGap apart: a thread that
// polls in a loop is between two calls at some of them.
const (
	pollSamples   = 5
	pollSampleGap = 2 * time.Millisecond
)

// threadWaits is, for one listening socket, how many threads are seen
// blocked in poll or select with it in their read lists (pollers) and in
// accept or accept4 on it (acceptors).
type threadWaits struct{ pollers, acceptors int }

// epollRef is one descriptor, in one process, of an epoll instance
// holding a listening socket.
type epollRef struct {
	pid, fd   int
	exclusive bool
}

// listenerWaiters reads who waits on the target's listening sockets on
// addr, for the socket whose waiters woken for every connection are the
// most: the epoll instances of the target's process group that hold it,
// read from each epoll descriptor's /proc/PID/fdinfo ("tfd: … events:
// HEX … ino: HEX"; procfs.ReadEpollItems) and told apart with kcmp (a descriptor dup'd, or
// inherited across fork, refers to the same instance: one waiter), and
// the threads seen blocked in poll, select or accept on it (the most of
// pollSamples looks; threadWaiters). SO_REUSEPORT listeners are sockets
// of their own, each in a set of its own: 1 plain, or 1 exclusive. An
// error says the epoll sets could not be read (or an fdinfo file did not
// parse); waitErr, that a thread's call could not be read (its waits are
// then a lower bound).
func listenerWaiters(inst conformance.Instance) (w listenerWaits, waitErr, err error) {
	g, ok := inst.(conformance.ProcessGroup)
	if !ok {
		return w, nil, fmt.Errorf("the target has no process of its own")
	}
	inodes, err := listenerInodes(inst.Addr())
	if err != nil {
		return w, nil, err
	}
	pids, err := g.Group()
	if err != nil {
		return w, nil, err
	}
	held, err := groupEpollItems(pids)
	if err != nil {
		return w, nil, err
	}
	refs := map[uint64][]epollRef{}
	for _, h := range held {
		if inodes[h.item.Ino] {
			refs[h.item.Ino] = append(refs[h.item.Ino], epollRef{pid: h.pid, fd: h.fd, exclusive: h.item.Exclusive()})
		}
	}
	seen := map[uint64]threadWaits{}
	for i := range pollSamples {
		if i > 0 {
			time.Sleep(pollSampleGap)
		}
		got, err := threadWaiters(pids, inodes)
		if err != nil && waitErr == nil {
			waitErr = err
		}
		for sock, n := range got {
			s := seen[sock]
			seen[sock] = threadWaits{pollers: max(s.pollers, n.pollers), acceptors: max(s.acceptors, n.acceptors)}
		}
	}
	first := true
	for sock := range inodes {
		s := listenerWaits{pollers: seen[sock].pollers, acceptors: seen[sock].acceptors}
		s.plain, s.exclusive, s.kcmpErr = epollInstances(refs[sock])
		if first || s.sharers() > w.sharers() || (s.sharers() == w.sharers() && s.exclusive+s.acceptors > w.exclusive+w.acceptors) {
			w, first = s, false
		}
	}
	return w, waitErr, nil
}

// heldItem is one item of an epoll set of the target's process group,
// with the epoll descriptor (pid, fd) it was read from.
type heldItem struct {
	pid, fd int
	item    procfs.EpollItem
}

// groupEpollItems reads every item of every epoll descriptor of pids from
// /proc/PID/fdinfo (procfs.ReadEpollItems). A descriptor closed meanwhile
// is left out; an fdinfo file that does not parse is an error.
func groupEpollItems(pids []int) ([]heldItem, error) {
	var out []heldItem
	for _, pid := range pids {
		fds, _ := procfs.ReadFds(pid)
		for _, f := range fds {
			if f.Target != procfs.EpollTarget {
				continue
			}
			items, err := procfs.ReadEpollItems(pid, f.Num)
			var bad *procfs.FormatError
			if errors.As(err, &bad) {
				return nil, err
			}
			for _, it := range items { // none when the descriptor closed meanwhile
				out = append(out, heldItem{pid: pid, fd: f.Num, item: it})
			}
		}
	}
	return out, nil
}

// epollInstances counts the distinct epoll instances among refs, with
// and without EPOLLEXCLUSIVE, comparing descriptors with kcmp; when kcmp
// fails, each descriptor counts as an instance of its own and the error
// says why.
func epollInstances(refs []epollRef) (plain, exclusive int, err error) {
	var distinct []epollRef
	for _, r := range refs {
		dup := false
		for _, d := range distinct {
			same, kerr := procfs.SameFile(d.pid, d.fd, r.pid, r.fd)
			if kerr != nil {
				if err == nil {
					err = kerr
				}
				continue
			}
			if same {
				dup = true
				break
			}
		}
		if !dup {
			distinct = append(distinct, r)
		}
	}
	for _, d := range distinct {
		if d.exclusive {
			exclusive++
		} else {
			plain++
		}
	}
	return plain, exclusive, err
}
