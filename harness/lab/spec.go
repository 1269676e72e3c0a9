package lab

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/target"
)

// Placeholders replaced in every element of Proc.Argv and Proc.Env.
const (
	// AddrPlaceholder is the server's data address, host:port.
	AddrPlaceholder = "{addr}"
	// ControlPlaceholder is the server's control address: a second address
	// when Spec.Control is set, else the data address again (a black-box
	// target serves both classes on one address).
	ControlPlaceholder = "{control}"
)

// The lab's fixed addresses. The server's namespace is private to the run,
// so fixed ports cannot collide with anything.
const (
	ServerIP    = "198.18.0.1"
	ClientIP    = "198.18.0.2"
	PrefixLen   = 24
	DataPort    = 9000
	ControlPort = 9001
)

// Defaults for the zero values of Spec's durations.
const (
	DefaultTimeout     = 5 * time.Minute
	DefaultGrace       = 5 * time.Second
	DefaultSampleEvery = 100 * time.Millisecond
)

// Time kept back from Spec.Timeout: auditSettle bounds how long the
// after-audit retries while it finds a difference (a discarded worker
// thread, a reaped child's /proc entry or a closed pidfd may take a moment
// to disappear); auditReserve covers the whole audit; reportMargin is for
// the run child to audit itself and report once its processes are
// stopped.
const (
	auditSettle  = 500 * time.Millisecond
	auditReserve = auditSettle + 500*time.Millisecond
	reportMargin = time.Second
)

// MinTimeout is the shortest Timeout that leaves the client a second,
// with grace as Spec.Grace: a run's stop, audit and report come out of
// the Timeout, and Validate refuses one below this.
func MinTimeout(grace time.Duration) time.Duration {
	return stopReserve(grace) + auditReserve + reportMargin + time.Second
}

// stopReserve is how much of the Timeout a run keeps for stopping its two
// processes (each up to grace plus proc's bounded wait for their output)
// and reporting, after the client's time is up.
func stopReserve(grace time.Duration) time.Duration {
	return 2*(grace+2*time.Second) + time.Second
}

// ErrUnavailable is wrapped by the error of a lab that could not be set
// up because the kernel refuses this process namespaces, for lack of
// privilege or quota: creating one (clone, unshare) or mounting the lab's
// /proc failed with EPERM, EACCES, ENOSPC, EINVAL or EUSERS, or writing a
// per-namespace sysctl failed with EPERM or EACCES.
// A failed clone counts only if a probe confirms it (the same clone without
// the uid and gid maps is refused too, while this program starts without
// namespaces), so that a mistake of ours in the maps is not taken for the
// kernel's refusal. The error names the step and the kernel's reason.
//
// Every other failure of a setup step (a netlink request, an address, a
// sysctl value the kernel rejects, the lab's own checks) is a plain error:
// a lab that is broken, not one that is forbidden, and it fails the run in
// every mode. Mode auto falls back to loopback on exactly ErrUnavailable;
// Mode lab returns it.
var ErrUnavailable = errors.New("lab unavailable")

// RequireEnv names the environment variable Required reads: "1"
// says a lab must work here, "0" that it need not.
const RequireEnv = "REACTORLAB_REQUIRE_LAB"

// Mode says where a run takes place.
type Mode string

const (
	// ModeAuto runs in the lab if this process can set one up, else on
	// loopback with the reason recorded in Result.Fallback.
	ModeAuto Mode = "auto"
	// ModeLab runs in the lab or fails with an error wrapping
	// ErrUnavailable.
	ModeLab Mode = "lab"
	// ModeLoopback runs on 127.0.0.1 in this process's namespaces, with the
	// same pinning, orchestration and keeper.
	ModeLoopback Mode = "loopback"
)

// ParseMode accepts "auto", "lab" or "loopback"; "" is auto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeAuto, nil
	case ModeAuto, ModeLab, ModeLoopback:
		return m, nil
	}
	return "", fmt.Errorf("mode %q: want auto, lab or loopback", s)
}

// Proc is one process of a run.
type Proc struct {
	// Argv is the command and its arguments. Argv[0] is a path, a command
	// looked up in PATH, or "@role": this program (/proc/self/exe) playing a
	// registered role (RegisterRole), with Argv[1:] as the role's args.
	// "{addr}" and "{control}" are replaced in every element.
	Argv []string `json:"argv"`
	// Env is extra environment ("K=V"), added to this process's, with the
	// same placeholders replaced. The server also gets REACTORLAB_LISTEN
	// set to its data address, last, so it wins.
	Env []string `json:"env,omitempty"`
	// PinsLoops says the process pins its loop threads itself, each to one
	// CPU of its side's set, and reports which (a reference reactor's
	// Stats.LoopThreads, the load generator's Summary.Loops): Run then
	// accepts a thread on one CPU of the set as well as on the set, and
	// the caller holds each thread to the report (the measured cell,
	// harness.RunCell, does). Without it every thread must be on the
	// whole set.
	PinsLoops bool `json:"pins_loops,omitempty"`
}

// Spec describes one measured pair.
type Spec struct {
	// Server is the reactor or black-box target; it must listen on
	// {addr} (also in REACTORLAB_LISTEN), and on {control} if Control.
	Server Proc `json:"server"`
	// Client is the load generator; it is started once every server
	// address accepts, and its exit ends the run.
	Client Proc `json:"client"`
	// Control says the server serves a separate control address; the run
	// waits for it too. When false, {control} is the data address.
	Control bool `json:"control,omitempty"`
	// ServerMayExit says the server may end by itself, with status 0,
	// before the harness stops it: a reference reactor that obeys a STOP
	// frame. Without it such an exit is taken for a crash and the run is
	// invalid. Any other status is invalid either way.
	ServerMayExit bool `json:"server_may_exit,omitempty"`
	// Placement is the placement; see Placement for its zero value.
	Placement Placement `json:"cpus"`
	// ServerCPU caps the server's CPU time at this many CPUs (0.5: half
	// of one), enforced by the kernel's CFS bandwidth control in a cgroup
	// of the server's own (proc.LimitCPU), from just after it accepts on
	// its addresses to its end; 0 leaves it unlimited. It makes the server,
	// not the load generator, the limit of a run on a machine whose CPUs
	// are few, and, unlike a competing busy process, it gives a server the
	// same CPU time however many threads it runs. A run that asks for it
	// where the kernel offers no cgroup CPU controller fails. Cgroups are
	// not namespaced: a run killed with SIGKILL leaves its (empty) cgroup,
	// which the next capped run removes once it is a minute old.
	ServerCPU float64 `json:"server_cpu,omitempty"`
	// Mode is where to run; "" is ModeAuto.
	Mode Mode `json:"mode,omitempty"`
	// Timeout is a hard bound on the whole of Run, setup, stops and audit
	// included (0: DefaultTimeout). The client's time is what is left after
	// the reserves for stopping both processes (each up to Grace plus 2 s),
	// for the lab's report and for the audit; Run refuses a Timeout that
	// leaves it less than a second. When its time is up the client is
	// stopped and the run marked invalid; a lab that has not reported when
	// the audit's reserve begins is killed whole.
	Timeout time.Duration `json:"-"` // JSON: "timeout_s", seconds
	// Ready bounds the wait for the server's addresses to accept
	// (0: proc.DefaultReady).
	Ready time.Duration `json:"-"` // JSON: "ready_s", seconds
	// Grace is how long a stop waits after SIGTERM before SIGKILL
	// (0: DefaultGrace).
	Grace time.Duration `json:"-"` // JSON: "grace_s", seconds
	// SampleEvery is the period of the CPU, memory and affinity samples
	// taken while the processes run (0: DefaultSampleEvery).
	SampleEvery time.Duration `json:"-"` // JSON: "sample_every_s", seconds
	// Interrupt, when closed, winds the run down before its end: the
	// client is stopped (SIGTERM, then SIGKILL after Grace) so that it can
	// report what it measured, then the server, and Run returns the record
	// as far as the run went, invalid, its error saying it was
	// interrupted. Cancelling Run's context, by contrast, kills the run
	// and everything in it at once. Nil never winds down. Not part of the
	// JSON form.
	Interrupt <-chan struct{} `json:"-"`
	// Sysctls are net.* sysctls to set in both lab namespaces, over the
	// defaults (net.core.somaxconn=4096, net.ipv4.ip_local_port_range=
	// "1024 65535"). Only per-namespace net.* keys are accepted; the host's
	// are never written. On loopback they are read, not set.
	Sysctls map[string]string `json:"sysctls,omitempty"`
}

// Alone reports a spec with no server (Server.Argv empty): the client runs
// alone, in the lab's client namespace (lo and the veth, which leads to
// nothing) or on loopback, and {addr} and {control} are empty. It is how a
// program that starts its own servers, the conformance suite, runs in the
// lab: isolated, and leaving nothing behind.
func (s Spec) Alone() bool { return len(s.Server.Argv) == 0 }

// defaultSysctls are set in both lab namespaces: a listen backlog for
// connection bursts and an ephemeral range for many client connections.
var defaultSysctls = map[string]string{
	"net.core.somaxconn":           "4096",
	"net.ipv4.ip_local_port_range": "1024 65535",
}

// Result is the record of one run. It is plain data and survives a
// JSON round trip (the run child sends most of it to the parent that way);
// its durations are in seconds, their keys say so ("elapsed_s").
type Result struct {
	// Mode is where the run took place: lab or loopback.
	Mode Mode `json:"mode"`
	// Fallback is why Mode auto ran on loopback: the kernel's refusal of
	// namespaces (ErrUnavailable), never a broken lab, which fails the
	// run instead ("" otherwise).
	Fallback string `json:"fallback,omitempty"`
	// UserNS reports a rootless lab: its namespaces are owned by a user
	// namespace in which this process's uid is root.
	UserNS bool `json:"user_ns,omitempty"`
	// Addr and Control are the server's addresses as the client saw them.
	Addr    string `json:"addr"`
	Control string `json:"control"`
	// Placement is the requested placement; each ProcResult says what was
	// verified.
	Placement Placement `json:"placement"`
	// Sysctls are the values read back after setting them in the lab's
	// namespaces (lab), or the host's, read only (loopback).
	Sysctls map[string]string `json:"sysctls,omitempty"`
	// Namespaces are the lab's namespaces ("net:[4026532…]"): the lab
	// child's net, pid, mnt (and user) and the server's and client's
	// network namespaces (also of a lab whose setup the kernel refused
	// half-way, before a fallback). None is reachable once Run has
	// returned, or the run is invalid.
	Namespaces []string `json:"namespaces,omitempty"`
	// Server and Client are nil for a process that was never started.
	Server *ProcResult `json:"server,omitempty"`
	Client *ProcResult `json:"client,omitempty"`
	// StartFailure is why the server could not be started, when it could
	// not (the program missing, an exit before it listened, no listener
	// within Ready): the client was then never started, nothing was
	// measured, and Run's error wraps it. Nil otherwise.
	StartFailure *target.StartError `json:"start_failure,omitempty"`
	// Audit compares this process before and after the run, and carries
	// the run child's audit of itself.
	Audit Audit `json:"audit"`
	// Valid is true when Invalid is empty: the run completed, both
	// processes behaved (client exit 0; server stopped by SIGTERM within
	// the grace, exiting 0 or by that signal, or, with ServerMayExit,
	// exited 0 by itself), placement held on every thread, and the audit
	// found nothing left behind, here or in the run child.
	Valid   bool     `json:"valid"`
	Invalid []string `json:"invalid,omitempty"`
	// Elapsed is the wall time of Run.
	Elapsed time.Duration `json:"-"` // JSON: "elapsed_s", seconds
}

// CPULimitRecord is a run's record of the server's CPU cap
// (Spec.ServerCPU) and of the kernel's account of it.
type CPULimitRecord struct {
	// Share is the cap in CPUs, PeriodMs the CFS period it holds over.
	Share    float64 `json:"share"`
	PeriodMs float64 `json:"period_ms"`
	// Cgroup is the cgroup's directory and CgroupVersion its version.
	Cgroup        string `json:"cgroup"`
	CgroupVersion int    `json:"cgroup_version"`
	// Processes counts the server's processes moved into it: its whole
	// process group (a wrapper shell and the server behind it, say).
	Processes int `json:"processes"`
	// Periods counts the periods in which the server ran; Throttled those
	// that ended with its quota spent; ThrottledS how long it was held
	// back in all. Read when the server has ended.
	Periods    int64   `json:"periods"`
	Throttled  int64   `json:"throttled_periods"`
	ThrottledS float64 `json:"throttled_s"`
}

// ProcResult is what became of one process.
type ProcResult struct {
	// Argv is the command as run, placeholders replaced ("@role" stays).
	Argv []string `json:"argv"`
	// Pid is the process id in the PID namespace of its starter (the lab's,
	// in lab mode).
	Pid int `json:"pid"`
	// Placement is the side's placement, resolved (Placement.Resolve);
	// unpinned, the process kept the mask it inherited.
	Placement SidePlacement `json:"cpus"`
	// CPULimit is the server's CPU cap and the kernel's account of it (nil
	// when Spec.ServerCPU was 0).
	CPULimit *CPULimitRecord `json:"cpu_limit,omitempty"`
	// AffinityStart is every thread's CPU mask just after the start;
	// AffinityEnd the last one observed while the process was alive (the
	// client may exit between samples). AffinityOK is false if any thread
	// of a pinned process was ever seen on another mask than its side's
	// set (or, with Proc.PinsLoops, than the set or one CPU of it);
	// AffinityBad then names each such sighting, the thread and both
	// masks (at most maxAffinityBad). Masks is every thread's masks as
	// sampled, in order, each change once: what a caller holds a
	// process's report of its loop threads to.
	AffinityStart []proc.ThreadAffinity `json:"affinity_start,omitempty"`
	AffinityEnd   []proc.ThreadAffinity `json:"affinity_end,omitempty"`
	AffinityOK    bool                  `json:"affinity_ok"`
	AffinityBad   []string              `json:"affinity_bad,omitempty"`
	Masks         []ThreadMasks         `json:"masks,omitempty"`
	// CPUTicks is the kernel's account of the side's CPUs (a pinned side
	// only) at each sample, thinned to at most maxCPUTicks: what
	// harness.CellResult.CPUBusy is computed from.
	CPUTicks []CPUTicks `json:"cpu_ticks,omitempty"`
	// AcceptQueue is, for the server, its listen queues on the data port
	// as sampled while the client ran (startAcceptQueue; nil for the
	// client, and for a run that took none).
	AcceptQueue *AcceptQueue `json:"accept_queue,omitempty"`
	// Threads is, for the server, its process group's threads as sampled
	// while the client ran (diagnose.StartTimes: where each was, every
	// diagnose.TimesInterval): what harness.CellResult.LoopTimes is
	// computed from (nil for the client, and for a run that took none).
	Threads *diagnose.ThreadTimes `json:"thread_times,omitempty"`
	// Code is the exit code, -1 when a signal ended the process; Signal
	// names that signal; Killed says the harness had to SIGKILL it;
	// TimedOut says the client did not exit in its time and was stopped.
	Code     int    `json:"code"`
	Signal   string `json:"signal,omitempty"`
	Killed   bool   `json:"killed,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// SelfExit says the process had exited before the harness stopped it:
	// what a client does, and what a server does only when it crashed.
	SelfExit bool `json:"self_exit,omitempty"`
	// Stdout is all of stdout, up to proc.MaxStdout bytes (the server's
	// carries its final JSON statistics; base64 in this record's JSON);
	// StderrTail is the end of stderr.
	Stdout          []byte `json:"stdout,omitempty"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty"`
	StderrTail      string `json:"stderr_tail,omitempty"`
	// UserNs, SysNs and MaxRSS (bytes) are exact totals from the rusage of
	// the reap.
	UserNs int64 `json:"user_ns"`
	SysNs  int64 `json:"sys_ns"`
	MaxRSS int64 `json:"max_rss"`
	// Sampled is the last /proc sample taken while the process ran, with
	// PeakRSS the highest seen; Samples counts them.
	Sampled proc.Usage `json:"sampled"`
	Samples int        `json:"samples"`
	// Elapsed runs from the start to the exit.
	Elapsed time.Duration `json:"-"` // JSON: "elapsed_s", seconds
}

// CPUTicks is the kernel's cumulative account of each CPU of a side's set
// at one moment, from /proc/stat in clock ticks (USER_HZ, 10 ms here):
// Busy is user + nice + system + irq + softirq + steal, Total adds idle
// and iowait; each per CPU of ProcResult.Placement, in its order.
type CPUTicks struct {
	At    time.Time `json:"at"`
	Busy  []uint64  `json:"busy"`
	Total []uint64  `json:"total"`
	// UserSteal is user + nice + steal per CPU: time in user space,
	// anyone's, and time the hypervisor gave another guest.
	UserSteal []uint64 `json:"user_steal,omitempty"`
	// Own is the side's own threads' cumulative time at the same moment
	// (nil where the kernel has no schedstat).
	Own *OwnTime `json:"own,omitempty"`
}

// OwnTime is the cumulative time of a side's threads (its process group):
// RunNs on a CPU and WaitNs runnable in a run queue, waiting for one, from
// the kernel's per-thread schedstat; UserNs in user space, from
// /proc/PID/stat (clock ticks).
type OwnTime struct {
	RunNs  uint64 `json:"run_ns"`
	WaitNs uint64 `json:"wait_ns"`
	UserNs uint64 `json:"user_ns"`
	// Slices counts the times its threads were put on a CPU (0 where the
	// kernel does not say).
	Slices uint64 `json:"slices,omitempty"`
}

// ThreadMasks is one thread's CPU masks as sampled, in order, each change
// once (Cpus_allowed_list form: "0-1", "3").
type ThreadMasks struct {
	Tid   int      `json:"tid"`
	Masks []string `json:"masks"`
}

// maxAffinityBad bounds ProcResult.AffinityBad.
const maxAffinityBad = 16

// noteMasks appends each thread's mask in a to Masks, where it changed.
func (p *ProcResult) noteMasks(a []proc.ThreadAffinity) {
	for _, t := range a {
		i := slices.IndexFunc(p.Masks, func(m ThreadMasks) bool { return m.Tid == t.Tid })
		if i < 0 {
			p.Masks = append(p.Masks, ThreadMasks{Tid: t.Tid})
			i = len(p.Masks) - 1
		}
		if m := p.Masks[i].Masks; len(m) == 0 || m[len(m)-1] != t.CPUList {
			p.Masks[i].Masks = append(m, t.CPUList)
		}
	}
}

// noteBad records a placement problem once, up to maxAffinityBad.
func (p *ProcResult) noteBad(why string) {
	if len(p.AffinityBad) < maxAffinityBad && !slices.Contains(p.AffinityBad, why) {
		p.AffinityBad = append(p.AffinityBad, why)
	}
}

// Audit is the leak audit of a run.
type Audit struct {
	Before Snapshot `json:"before"`
	After  Snapshot `json:"after"`
	// Child is the run child's audit of itself (nil if no run child
	// reported one: the run never started a process).
	Child *ChildAudit `json:"child,omitempty"`
	// Diffs names every difference between Before and After, every way one
	// of the lab's namespaces is still reachable, and every difference the
	// run child and its keeper found (prefixed "run child:", "keeper:");
	// empty means the run left nothing behind.
	Diffs []string `json:"diffs,omitempty"`
}

// ChildAudit is what the run child (the lab child, or its loopback
// counterpart) finds about itself once both processes are reaped and its
// worker threads have ended, before it reports; and what the keeper found
// after the run child had exited.
type ChildAudit struct {
	// Threads counts the run child's threads that were checked.
	Threads int `json:"threads"`
	// Netns is the run child's own network namespace, where every one of
	// its threads must be again; CPULists are its threads' distinct masks when
	// it started, the only ones a thread may have again.
	Netns    string   `json:"netns"`
	CPULists []string `json:"cpus"`
	// Diffs names every thread of the run child left in another network
	// namespace or on another mask, and every process of the run still
	// running (in the lab: anything in its PID namespace); empty means
	// none.
	Diffs []string `json:"diffs,omitempty"`
	// Swept names every process the keeper had to kill after the run child
	// had exited: a process of the run that escaped its process group and
	// was orphaned to the keeper (a child subreaper).
	Swept []string `json:"swept,omitempty"`
}

// Snapshot is the state of this process that a run must leave as it found
// it.
type Snapshot struct {
	// Fds maps each open descriptor to what it refers to.
	Fds map[int]string `json:"fds"`
	// Processes are the living descendants: "pid (comm) start=ticks".
	Processes []string `json:"processes"`
	// Links are the host namespace's links a run could leave there (those
	// named as the lab's veth ends), "index:name"; normally none.
	Links []string `json:"links"`
	// ThreadNetns and ThreadCPUs are the distinct network namespaces and
	// CPU masks of this process's threads.
	ThreadNetns []string `json:"thread_netns"`
	ThreadCPUs  []string `json:"thread_cpus"`
}

// expand replaces the placeholders in argv and env and turns "@role" into
// this program with REACTORLAB_ROLE set.
func (p Proc) expand(addr, control string) (argv, env []string) {
	r := strings.NewReplacer(AddrPlaceholder, addr, ControlPlaceholder, control)
	argv = make([]string, len(p.Argv))
	for i, a := range p.Argv {
		argv[i] = r.Replace(a)
	}
	for _, kv := range p.Env {
		env = append(env, r.Replace(kv))
	}
	if name, ok := strings.CutPrefix(argv[0], RolePrefix); ok {
		argv[0] = selfExe
		env = append(env, RoleEnv+"="+name)
	}
	return argv, env
}
