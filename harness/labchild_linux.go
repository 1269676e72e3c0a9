//go:build linux

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The roles of the lab child and of its keeper (internalRoles).
const (
	labRole    = "lab"
	keeperRole = "lab-keeper"
)

// The veth pair's ends, in the server's and the client's namespace.
const (
	serverLink = "rl-server"
	clientLink = "rl-client"
)

func init() {
	RegisterRole(labRole, labMain)
	RegisterRole(keeperRole, keeperMain)
}

// keeperMain is the lab's keeper, started by the harness with SIGTERM as
// its parent-death signal. It reads the labRequest from stdin and starts
// the lab child with it: in new network, PID and mount namespaces (tried
// first when root), else with a user namespace too, mapping this uid and
// gid to root; with SIGKILL as its parent-death signal; with the keeper's
// stdout and stderr. It reports the start (or every refusal, as a setup
// error) on stdout before the child can write anything (the child waits
// for the request on its stdin), then waits for the child. On SIGTERM it
// kills the child and reaps it, so the lab's PID namespace is gone when the
// keeper exits. It exits with the child's status.
func keeperMain([]string) int {
	out := json.NewEncoder(os.Stdout)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	body, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	var req labRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		out.Encode(labEvent{SetupError: "keeper: read the request: " + err.Error()})
		return 1
	}
	attempts := []bool{true}
	if os.Geteuid() == 0 {
		attempts = []bool{false, true}
	}
	var refusals []string
	for _, userNS := range attempts {
		what := "clone net,pid,mnt"
		attr := &syscall.SysProcAttr{Cloneflags: labCloneFlags(userNS), Pdeathsig: syscall.SIGKILL}
		if userNS {
			what = "clone user,net,pid,mnt"
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
			attr.GidMappingsEnableSetgroups = false
		}
		cmd := exec.Command(selfExe)
		cmd.Env = append(os.Environ(), RoleEnv+"="+labRole)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			refusals = append(refusals, what+": "+err.Error())
			continue
		}
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = attr
		release, err := startLocked(cmd)
		if err != nil {
			// Go's syscall package leaks the pipe it uses to hand over uid
			// and gid maps when the clone itself fails (Go 1.26:
			// forkAndExecInChild returns before it closes mapPipe); that
			// is one reason this runs in the keeper, which exits soon.
			stdin.Close()
			refusals = append(refusals, what+": "+err.Error())
			continue
		}
		pid := cmd.Process.Pid
		out.Encode(labEvent{Started: &labStarted{Pid: pid, UserNS: userNS, Namespaces: childNamespaces(pid, req.ParentNS)}})
		stdin.Write(body) // an error shows as the child's
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-term:
			cmd.Process.Kill()
			err = <-done
		}
		release()
		if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() >= 0 {
			return cmd.ProcessState.ExitCode()
		}
		fmt.Fprintf(os.Stderr, "lab keeper: the lab child: %v\n", err)
		return 1
	}
	out.Encode(labEvent{SetupError: strings.Join(refusals, "; ")})
	return 1
}

// labRequest is what the parent sends the lab child on its stdin.
type labRequest struct {
	Spec    LabSpec           `json:"spec"`    // validated, defaults applied
	Sysctls map[string]string `json:"sysctls"` // to set in both namespaces
	// Budget is how long the child has, from its start, until it must have
	// reported its result; the parent kills it soon after.
	Budget time.Duration `json:"budget"`
	// ParentNS are the parent's namespaces by kind ("mnt": "mnt:[…]"); the
	// child refuses to run in the parent's mount or PID namespace, and
	// reports only its namespaces that differ from them.
	ParentNS map[string]string `json:"parent_ns"`
	// Probe asks for the setup alone (CheckLab): the child reports it and
	// exits.
	Probe bool `json:"probe,omitempty"`
}

// labEvent is one JSON line from the keeper or the lab child; exactly one
// field is set.
type labEvent struct {
	// Started (from the keeper, first): the lab child runs.
	Started *labStarted `json:"started,omitempty"`
	// SetupError: the lab could not be set up ("step: reason"). Nothing was
	// started; the child exits.
	SetupError string `json:"setup_error,omitempty"`
	// Setup: the namespaces exist, joined and configured.
	Setup *labSetup `json:"setup,omitempty"`
	// Up: both processes have started.
	Up *labUp `json:"up,omitempty"`
	// Result: the run is over and both processes are reaped.
	Result *labReport `json:"result,omitempty"`
}

type labStarted struct {
	Pid        int      `json:"pid"`        // in the keeper's (the harness's) PID namespace
	UserNS     bool     `json:"user_ns"`    // it runs in a user namespace of its own
	Namespaces []string `json:"namespaces"` // its namespaces that are not the harness's
}

type labSetup struct {
	Namespaces []string          `json:"namespaces"`
	Sysctls    map[string]string `json:"sysctls"`
}

type labReport struct {
	Addr    string      `json:"addr"`
	Control string      `json:"control"`
	Server  *ProcResult `json:"server,omitempty"`
	Client  *ProcResult `json:"client,omitempty"`
	Error   string      `json:"error,omitempty"`
}

// labMain is the lab child: PID 1 of its own PID namespace, in its own
// network and mount namespaces. It reads a labRequest from stdin, writes
// labEvents to stdout, and returns 0 once it has reported a result, 1 if
// the lab could not be set up. When it exits, the kernel kills whatever is
// left in its PID namespace.
func labMain([]string) int {
	out := json.NewEncoder(os.Stdout)
	setupFailed := func(step string, err error) int {
		out.Encode(labEvent{SetupError: step + ": " + err.Error()})
		return 1
	}
	start := time.Now()
	var req labRequest
	if err := json.NewDecoder(io.LimitReader(os.Stdin, 1<<20)).Decode(&req); err != nil {
		return setupFailed("read the request", err)
	}
	if err := checkLabChild(req.ParentNS); err != nil {
		return setupFailed("check the namespaces", err)
	}
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(req.Budget))
	defer cancel()

	l, serr := setupLab(req)
	if serr != nil {
		return setupFailed(serr.step, serr.err)
	}
	defer l.close() // after orchestrate has reaped both processes
	out.Encode(labEvent{Setup: &labSetup{Namespaces: l.namespaces, Sysctls: l.sysctls}})
	if req.Probe {
		return 0
	}

	s := &spec{LabSpec: req.Spec, sysctls: req.Sysctls}
	rep := &labReport{
		Addr:    net.JoinHostPort(LabServerIP, strconv.Itoa(LabDataPort)),
		Control: net.JoinHostPort(LabServerIP, strconv.Itoa(LabDataPort)),
	}
	if s.Control {
		rep.Control = net.JoinHostPort(LabServerIP, strconv.Itoa(LabControlPort))
	}
	pr := pair{server: l.server.w, client: l.client.w, addr: rep.Addr, control: rep.Control, probe: true}
	var err error
	rep.Server, rep.Client, err = orchestrate(ctx, s, pr, func(up labUp) { out.Encode(labEvent{Up: &up}) })
	if err != nil {
		rep.Error = err.Error()
	}
	if err := out.Encode(labEvent{Result: rep}); err != nil {
		fmt.Fprintf(os.Stderr, "lab: report the result: %v\n", err)
		return 1
	}
	return 0
}

// checkLabChild refuses to set up a lab anywhere but in fresh PID and mount
// namespaces: the role mounts over /proc and changes mount propagation,
// which must never happen to the parent's mounts.
func checkLabChild(parent map[string]string) error {
	if os.Getpid() != 1 {
		return fmt.Errorf("pid %d: the lab role runs only as PID 1 of a new PID namespace, started by harness.Run", os.Getpid())
	}
	for _, k := range []string{"mnt", "pid"} {
		own, err := os.Readlink("/proc/self/ns/" + k)
		if err != nil {
			return err
		}
		if p := parent[k]; p == "" || p == own {
			return fmt.Errorf("still in the parent's %s namespace %s", k, own)
		}
	}
	return nil
}

// setupError is a failed step of the lab's setup.
type setupError struct {
	step string
	err  error
}

// labNet is one side's network namespace: the worker whose thread is in it
// and a descriptor of it.
type labNet struct {
	w  *worker
	ns netns.NsHandle
	id string // "net:[…]"
}

type lab struct {
	server, client *labNet
	namespaces     []string          // the lab's own and both sides'
	sysctls        map[string]string // as read back
}

// setupLab makes the mounts private, mounts the lab's /proc, creates the
// two network namespaces, the veth between them, and sets the sysctls.
func setupLab(req labRequest) (*lab, *setupError) {
	// Nothing this process mounts may propagate to the parent's mounts.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, &setupError{"make mounts private", os.NewSyscallError("mount", err)}
	}
	// A /proc of this PID namespace: pids the lab starts are numbered in it,
	// and /proc/self, /proc/<pid> and /proc/thread-self must mean them.
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return nil, &setupError{"mount /proc", os.NewSyscallError("mount", err)}
	}
	l := &lab{}
	for _, k := range []string{"net", "pid", "mnt", "user"} {
		own, err := os.Readlink("/proc/self/ns/" + k)
		if err != nil {
			return nil, &setupError{"read the lab's namespaces", err}
		}
		if own != req.ParentNS[k] {
			l.namespaces = append(l.namespaces, own)
		}
	}
	var err error
	if l.server, err = newLabNet("server"); err != nil {
		return nil, &setupError{"create the server's network namespace", err}
	}
	if l.client, err = newLabNet("client"); err != nil {
		l.server.close()
		return nil, &setupError{"create the client's network namespace", err}
	}
	l.namespaces = append(l.namespaces, l.server.id, l.client.id)
	if serr := l.configure(req.Sysctls); serr != nil {
		l.close()
		return nil, serr
	}
	return l, nil
}

// newLabNet starts a worker whose thread unshares a new network namespace
// and keeps a descriptor of it (close-on-exec, so no child inherits it).
func newLabNet(name string) (*labNet, error) {
	n := &labNet{ns: -1}
	w, err := startWorker(name, func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return os.NewSyscallError("unshare", err)
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
	n.ns.Close()
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
func (l *lab) configure(sysctls map[string]string) *setupError {
	var serr *setupError
	side := func(n *labNet, f func(h *netlink.Handle) *setupError) {
		if serr != nil {
			return
		}
		err := n.w.do(func() error {
			h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
			if err != nil {
				serr = &setupError{"open a netlink socket in the " + n.w.name + "'s namespace", err}
				return nil
			}
			defer h.Close()
			serr = f(h)
			return nil
		})
		if err != nil && serr == nil {
			serr = &setupError{n.w.name + "'s namespace", err}
		}
	}
	side(l.server, func(h *netlink.Handle) *setupError {
		if err := linkUp(h, "lo", ""); err != nil {
			return &setupError{"bring lo up in the server's namespace", err}
		}
		veth := &netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: serverLink},
			PeerName:      clientLink,
			PeerNamespace: netlink.NsFd(int(l.client.ns)),
		}
		if err := h.LinkAdd(veth); err != nil {
			return &setupError{"create veth", err}
		}
		if err := linkUp(h, serverLink, LabServerIP); err != nil {
			return &setupError{"configure " + serverLink, err}
		}
		return nil
	})
	side(l.client, func(h *netlink.Handle) *setupError {
		if err := linkUp(h, "lo", ""); err != nil {
			return &setupError{"bring lo up in the client's namespace", err}
		}
		if err := linkUp(h, clientLink, LabClientIP); err != nil {
			return &setupError{"configure " + clientLink, err}
		}
		return nil
	})
	if serr != nil {
		return serr
	}
	// /proc/sys/net shows the network namespace of the thread that opens
	// the file: set each side's from its worker.
	var read [2]map[string]string
	for i, n := range []*labNet{l.server, l.client} {
		err := n.w.do(func() error {
			var err error
			read[i], err = setSysctls(sysctls)
			return err
		})
		if err != nil {
			return &setupError{"set sysctls in the " + n.w.name + "'s namespace", err}
		}
	}
	if !maps.Equal(read[0], read[1]) {
		return &setupError{"set sysctls", fmt.Errorf("the namespaces differ: server %v, client %v", read[0], read[1])}
	}
	l.sysctls = read[0]
	return nil
}

// linkUp adds ip/LabPrefixLen to the link (unless ip is "") and brings it
// up.
func linkUp(h *netlink.Handle, name, ip string) error {
	link, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("find %s: %w", name, err)
	}
	if ip != "" {
		a, err := netlink.ParseAddr(ip + "/" + strconv.Itoa(LabPrefixLen))
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

// setSysctls writes each sysctl through the calling thread's /proc/sys and
// reads it back; a value that does not read back as written (whitespace
// aside) is an error.
func setSysctls(m map[string]string) (map[string]string, error) {
	got := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := sysctlPath(k)
		if err := os.WriteFile(p, []byte(m[k]), 0); err != nil {
			return nil, fmt.Errorf("%s=%q: %w", k, m[k], err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s: read back: %w", k, err)
		}
		v := strings.Join(strings.Fields(string(b)), " ")
		if v != strings.Join(strings.Fields(m[k]), " ") {
			return nil, fmt.Errorf("%s: wrote %q, reads %q", k, m[k], v)
		}
		got[k] = v
	}
	return got, nil
}

// readSysctls reads each sysctl through the calling thread's /proc/sys;
// one that cannot be read is recorded as such.
func readSysctls(m map[string]string) map[string]string {
	got := map[string]string{}
	for k := range m {
		b, err := os.ReadFile(sysctlPath(k))
		if err != nil {
			got[k] = "unreadable: " + err.Error()
			continue
		}
		got[k] = strings.Join(strings.Fields(string(b)), " ")
	}
	return got
}
