package conformance

import (
	"errors"
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/internal/procfs"
)

// servingProcesses returns the pids of the target's process group that
// hold one of its listening sockets (the processes that accept its
// connections; several SO_REUSEPORT workers have one each), found by the
// sockets' inodes in the kernel's TCP tables and the group's descriptor tables,
// and every pid of the group. It returns an error when the target has no
// process of its own or no process of it holds a listener.
func servingProcesses(inst Instance) (serving, group []int, err error) {
	g, ok := inst.(interface{ Group() ([]int, error) })
	if !ok {
		return nil, nil, fmt.Errorf("the target has no process of its own")
	}
	inodes, err := listenerInodes(inst.Addr())
	if err != nil {
		return nil, nil, err
	}
	group, err = g.Group()
	if err != nil {
		return nil, nil, err
	}
	for _, pid := range group {
		if len(listenerFds(pid, inodes)) > 0 {
			serving = append(serving, pid)
		}
	}
	if len(serving) == 0 {
		return nil, group, fmt.Errorf("no process of the target's group holds a socket listening on %s", inst.Addr())
	}
	return serving, group, nil
}

// listenerFds maps pid's descriptors that are one of the sockets of
// inodes to that socket.
func listenerFds(pid int, inodes map[string]bool) map[int]string {
	out := map[int]string{}
	fds, _ := procfs.ReadFds(pid)
	for _, f := range fds {
		if inodes[f.Target] {
			out[f.Num] = f.Target
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
func listenerWaiters(inst Instance) (w listenerWaits, waitErr, err error) {
	g, ok := inst.(interface{ Group() ([]int, error) })
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
	refs := map[string][]epollRef{}
	for _, pid := range pids {
		fds, _ := procfs.ReadFds(pid)
		for _, f := range fds {
			if f.Target != procfs.EpollTarget {
				continue
			}
			items, err := procfs.ReadEpollItems(pid, f.Num)
			var bad *procfs.FormatError
			if errors.As(err, &bad) {
				return w, nil, err
			}
			if err != nil {
				continue // closed meanwhile
			}
			for _, it := range items {
				if sock := fmt.Sprintf("socket:[%d]", it.Ino); inodes[sock] {
					refs[sock] = append(refs[sock], epollRef{pid: pid, fd: f.Num, exclusive: it.Exclusive()})
				}
			}
		}
	}
	seen := map[string]threadWaits{}
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
