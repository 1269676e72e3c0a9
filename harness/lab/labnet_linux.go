//go:build linux

package lab

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"strconv"
	"syscall"

	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/internal/procfs"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The veth pair's ends, in the server's and the client's namespace.
const (
	serverLink = "rl-server"
	clientLink = "rl-client"
)

// setupError is a failed step of the run's setup. unavailable says it is
// the kernel refusing namespaces (ErrUnavailable), not a broken lab.
type setupError struct {
	step        string
	err         error
	unavailable bool
}

// labNet is one side's network namespace: the worker whose thread is in it
// and a descriptor of it. On loopback there is no namespace: ns is -1 and
// id "".
type labNet struct {
	w  *worker
	ns netns.NsHandle
	id string // "net:[…]"
}

type lab struct {
	server, client *labNet
	addr, control  string            // the server's addresses
	namespaces     []string          // the lab's own and both sides'
	sysctls        map[string]string // as read back (loopback: the host's, read only)
}

// setupLab makes the mounts private, mounts the lab's /proc, creates the
// two network namespaces, the veth between them, and sets the sysctls.
// Only the kernel refusing the /proc mount or a network namespace, or a
// sysctl for lack of privilege, makes the error unavailable.
func setupLab(req labRequest) (*lab, *setupError) {
	// Nothing this process mounts may propagate to the parent's mounts. In
	// a mount namespace of its own (and owned by its user namespace, if
	// rootless) this never fails unless we got it wrong.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, &setupError{step: "make mounts private", err: os.NewSyscallError("mount", err)}
	}
	// A /proc of this PID namespace: pids the lab starts are numbered in it,
	// and /proc/self, /proc/<pid> and /proc/thread-self must mean them. The
	// kernel refuses it where /proc is partly hidden from this user
	// namespace (a container's masked /proc), for one.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, &setupError{step: "mount /proc", err: os.NewSyscallError("mount", err), unavailable: refusal(err)}
	}
	l := &lab{
		addr:    net.JoinHostPort(ServerIP, strconv.Itoa(DataPort)),
		control: net.JoinHostPort(ServerIP, strconv.Itoa(DataPort)),
	}
	if req.Spec.Alone() {
		l.addr, l.control = "", ""
	} else if req.Spec.Control {
		l.control = net.JoinHostPort(ServerIP, strconv.Itoa(ControlPort))
	}
	for _, k := range []string{"net", "pid", "mnt", "user"} {
		own, err := procfs.Namespace(procfs.Self, k)
		if err != nil {
			return nil, &setupError{step: "read the lab's namespaces", err: err}
		}
		if own != req.ParentNS[k] {
			l.namespaces = append(l.namespaces, own)
		}
	}
	var err error
	if l.server, err = newLabNet("server"); err != nil {
		return nil, &setupError{step: "create the server's network namespace", err: err, unavailable: isRefused(err)}
	}
	if l.client, err = newLabNet("client"); err != nil {
		l.server.close()
		return nil, &setupError{step: "create the client's network namespace", err: err, unavailable: isRefused(err)}
	}
	l.namespaces = append(l.namespaces, l.server.id, l.client.id)
	if serr := l.configure(req.Sysctls, req.Break); serr != nil {
		l.close()
		return nil, serr
	}
	return l, nil
}

// setupLoopback starts the two workers in this process's namespaces and
// picks the server's addresses on 127.0.0.1; the sysctls are the host's,
// read, never written.
func setupLoopback(req labRequest) (*lab, *setupError) {
	l := &lab{sysctls: readSysctls(req.Sysctls)}
	if !req.Spec.Alone() {
		var err error
		if l.addr, err = proc.FreeAddr(); err != nil {
			return nil, &setupError{step: "loopback", err: err}
		}
		l.control = l.addr
		for req.Spec.Control && l.control == l.addr {
			if l.control, err = proc.FreeAddr(); err != nil {
				return nil, &setupError{step: "loopback", err: err}
			}
		}
	}
	for _, side := range []struct {
		name string
		n    **labNet
	}{{"server", &l.server}, {"client", &l.client}} {
		w, err := startWorker(side.name, nil)
		if err != nil {
			if l.server != nil {
				l.server.close()
			}
			return nil, &setupError{step: "loopback: start the " + side.name + "'s worker", err: err}
		}
		*side.n = &labNet{w: w, ns: -1}
	}
	return l, nil
}

// nsRefusal marks the kernel's refusal of a namespace (see refusal).
type nsRefusal struct{ err error }

func (r *nsRefusal) Error() string { return r.err.Error() }
func (r *nsRefusal) Unwrap() error { return r.err }

// isRefused reports whether err is, or wraps, an nsRefusal.
func isRefused(err error) bool {
	var r *nsRefusal
	return errors.As(err, &r)
}

// newLabNet starts a worker whose thread unshares a new network namespace
// and keeps a descriptor of it (close-on-exec, so no child inherits it).
// The kernel's refusal of the unshare is an nsRefusal.
func newLabNet(name string) (*labNet, error) {
	n := &labNet{ns: -1}
	w, err := startWorker(name, func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			err = os.NewSyscallError("unshare", err)
			if refusal(err) {
				return &nsRefusal{err}
			}
			return err
		}
		h, err := netns.GetFromPath("/proc/thread-self/ns/net")
		if err != nil {
			return fmt.Errorf("open /proc/thread-self/ns/net: %w", err)
		}
		n.ns = h
		var st unix.Stat_t
		if err := unix.Fstat(int(h), &st); err != nil {
			h.Close()
			return os.NewSyscallError("fstat", err)
		}
		n.id = fmt.Sprintf("net:[%d]", st.Ino)
		return nil
	})
	if err != nil {
		return nil, err
	}
	n.w = w
	return n, nil
}

func (n *labNet) close() {
	n.w.stop()
	if n.ns >= 0 {
		n.ns.Close()
	}
}

// close ends both workers (Go discards their threads) and closes the
// namespace descriptors. Call it once both processes are reaped.
func (l *lab) close() {
	l.server.close()
	l.client.close()
}

// configure brings lo up in both namespaces, creates the veth pair from
// the server's namespace with its peer in the client's, addresses and
// brings up both ends, and sets the sysctls in both. Each side's netlink
// socket is opened on its worker's thread, so it belongs to that side's
// namespace; no thread changes namespace for it.
func (l *lab) configure(sysctls map[string]string, brk string) *setupError {
	if brk == breakSysctl {
		sysctls = maps.Clone(sysctls)
		if sysctls == nil {
			sysctls = map[string]string{}
		}
		sysctls["net.ipv4.ip_local_port_range"] = "banana" // the kernel refuses it: EINVAL
	}
	if serr := l.configureLinks(brk); serr != nil {
		return serr
	}
	return l.configureSysctls(sysctls)
}

// configureLinks brings lo up on both sides and joins them by the veth
// pair, each end addressed and up.
func (l *lab) configureLinks(brk string) *setupError {
	peer := clientLink
	if brk == breakVeth {
		peer = "rl-client-name-longer-than-IFNAMSIZ" // the kernel refuses it
	}
	serr := l.server.withNetlink(func(h *netlink.Handle) *setupError {
		if err := linkUp(h, "lo", ""); err != nil {
			return &setupError{step: "bring lo up in the server's namespace", err: err}
		}
		veth := &netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: serverLink},
			PeerName:      peer,
			PeerNamespace: netlink.NsFd(int(l.client.ns)),
		}
		if err := h.LinkAdd(veth); err != nil {
			return &setupError{step: "create veth", err: err}
		}
		if err := linkUp(h, serverLink, ServerIP); err != nil {
			return &setupError{step: "configure " + serverLink, err: err}
		}
		return nil
	})
	if serr != nil {
		return serr
	}
	return l.client.withNetlink(func(h *netlink.Handle) *setupError {
		if err := linkUp(h, "lo", ""); err != nil {
			return &setupError{step: "bring lo up in the client's namespace", err: err}
		}
		if err := linkUp(h, clientLink, ClientIP); err != nil {
			return &setupError{step: "configure " + clientLink, err: err}
		}
		return nil
	})
}

// withNetlink runs f on the side's worker thread with a netlink socket
// opened there, so in the side's namespace.
func (n *labNet) withNetlink(f func(h *netlink.Handle) *setupError) *setupError {
	var serr *setupError
	err := n.w.do(func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			serr = &setupError{step: "open a netlink socket in the " + n.w.name + "'s namespace", err: err}
			return nil
		}
		defer h.Close()
		serr = f(h)
		return nil
	})
	if err != nil && serr == nil {
		serr = &setupError{step: n.w.name + "'s namespace", err: err}
	}
	return serr
}

// configureSysctls sets the sysctls on both sides, each from its worker
// (/proc/sys/net shows the network namespace of the thread that opens the
// file), and records them as read back, which must agree.
func (l *lab) configureSysctls(sysctls map[string]string) *setupError {
	var read [2]map[string]string
	for i, n := range []*labNet{l.server, l.client} {
		err := n.w.do(func() error {
			var err error
			read[i], err = setSysctls(sysctls)
			return err
		})
		if err != nil {
			// The kernel may refuse a sysctl of a namespace owned by a user
			// namespace (EPERM, EACCES): a lab this user may not have. A
			// value it rejects (EINVAL), or a key it lacks (ENOENT), is
			// the spec's or ours.
			var errno syscall.Errno
			denied := errors.As(err, &errno) && (errno == unix.EPERM || errno == unix.EACCES)
			return &setupError{step: "set sysctls in the " + n.w.name + "'s namespace", err: err, unavailable: denied}
		}
	}
	if !maps.Equal(read[0], read[1]) {
		return &setupError{step: "set sysctls", err: fmt.Errorf("the namespaces differ: server %v, client %v", read[0], read[1])}
	}
	l.sysctls = read[0]
	return nil
}

// linkUp adds ip/PrefixLen to the link (unless ip is "") and brings it
// up.
func linkUp(h *netlink.Handle, name, ip string) error {
	link, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find %s: %w", name, err)
	}
	if ip != "" {
		a, err := netlink.ParseAddr(ip + "/" + strconv.Itoa(PrefixLen))
		if err != nil {
			return err
		}
		if err := h.AddrAdd(link, a); err != nil {
			return fmt.Errorf("add %s to %s: %w", a, name, err)
		}
	}
	if err := h.LinkSetUp(link); err != nil {
		return fmt.Errorf("set %s up: %w", name, err)
	}
	return nil
}
