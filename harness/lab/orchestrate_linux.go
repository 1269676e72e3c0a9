//go:build linux

package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/harness/proc"
	"github.com/reactorlab/reactorlab/target"
)

// pair is where a run's two processes start: a worker per side (already in
// its side's network namespace, in the lab), and the server's addresses.
type pair struct {
	server, client *worker
	addr, control  string
	// probe says whether the client's side must see the addresses accept
	// before the client starts (lab: over the veth); loopback needs no
	// second look.
	probe bool
}

// labUp is what a run has started, once both processes are up. LabPid and
// Namespaces are filled in by the parent of a lab (host pid and every lab
// namespace); ServerPid and ClientPid are in the starter's PID namespace.
type labUp struct {
	LabPid     int      `json:"lab_pid,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"`
	ServerPid  int      `json:"server_pid"`
	ClientPid  int      `json:"client_pid"`
}

// side is one process of a run while it runs.
type side struct {
	name string
	cpus SidePlacement // resolved
	// pinsLoops says the process pins its loop threads to one CPU of
	// cpus each (Proc.PinsLoops).
	pinsLoops bool
	w         *worker
	p         *proc.Process

	mu  sync.Mutex // guards res while the sampler runs
	res *ProcResult
	// cut says the run was cut short (its context ended) before the
	// process exited: a client stopped then did not time out.
	cut bool
}

// orchestrate runs the pair: the server (pinned, from its worker), a look
// from the client's side at its addresses, the client (pinned, from its
// worker), samples while the client runs, and the stops: the client's when
// it has not exited by the client deadline (ctx's deadline less the stop
// reserve), then the server's. Whatever happens, no process it started is
// left unreaped when it returns. A nil result means that process was never
// started.
func orchestrate(ctx context.Context, s *validSpec, pr pair, onUp func(labUp)) (srvRes, cliRes *ProcResult, err error) {
	srv := &side{name: "server", cpus: s.Placement.Server, pinsLoops: s.Server.PinsLoops, w: pr.server}
	cli := &side{name: "client", cpus: s.Placement.Client, pinsLoops: s.Client.PinsLoops, w: pr.client}
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil, nil, errors.New("run: no deadline") // Run always sets one
	}
	clientDeadline := deadline.Add(-stopReserve(s.Grace))

	if s.Alone() {
		cliRes, err = runAlone(ctx, s, pr, cli, clientDeadline, onUp)
		return nil, cliRes, err
	}
	argv, env := s.Server.expand(pr.addr, pr.control)
	var waits []string
	if s.Control {
		waits = []string{pr.control}
	}
	err = srv.start(ctx, recorded(s.Server, pr), proc.Spec{
		Argv: argv, Env: env, Addr: pr.addr, WaitAddrs: waits, Ready: s.Ready, Grace: s.Grace,
	})
	if err != nil {
		// The server's own failure, not the run's end: the three causes a
		// caller refuses the target for.
		if sf := startFailure(err, strings.Join(s.Server.Argv, " "), s.Ready); sf != nil && ctx.Err() == nil {
			err = sf
		}
		return nil, nil, err
	}
	if s.ServerCPU > 0 {
		lim, limErr := srv.p.LimitCPU(s.ServerCPU, 0)
		if limErr != nil {
			return srv.res, nil, errors.Join(fmt.Errorf("server: server_cpu %v: %w", s.ServerCPU, limErr), srv.stop())
		}
		// Every return below has stopped (and reaped) the server first.
		defer func() { err = errors.Join(err, srv.releaseCPULimit(lim)) }()
	}

	if pr.probe {
		addrs := []string{pr.addr}
		if s.Control {
			addrs = append(addrs, pr.control)
		}
		ready := min(s.Ready, time.Until(clientDeadline))
		if err := pr.client.do(func() error { return dialUntil(ctx, addrs, ready) }); err != nil {
			err = fmt.Errorf("server: from the client's namespace: %w", err)
			if ctx.Err() == nil {
				// It listens in its own namespace only (on 127.0.0.1, say):
				// no listener the client can reach.
				err = &target.StartError{Cause: target.StartNoListener, Target: strings.Join(s.Server.Argv, " "), Addrs: addrs, Timeout: ready, Code: -1,
					Detail:     "dialled from the load generator's network namespace (a server that listens on 127.0.0.1 only is not reachable there)",
					StderrTail: strings.TrimSpace(srv.p.StderrTail()), StdoutTail: strings.TrimSpace(srv.p.StdoutTail())}
			}
			return srv.res, nil, errors.Join(err, srv.stop())
		}
	}

	argv, env = s.Client.expand(pr.addr, pr.control)
	err = cli.start(ctx, recorded(s.Client, pr), proc.Spec{Argv: argv, Env: env, NoListen: true, Grace: s.Grace})
	if err != nil {
		return srv.res, nil, errors.Join(err, srv.stop())
	}
	if onUp != nil {
		onUp(labUp{ServerPid: srv.p.Pid(), ClientPid: cli.p.Pid()})
	}

	// The server's threads are read from this process, where its pid is
	// (the run child's PID namespace), the whole process group: a wrapper
	// shell's child serves.
	stopThreads := diagnose.StartTimes(srv.p.Group)
	stopAcceptQueue := startAcceptQueue(pr.server, pr.addr)
	err = awaitClient(ctx, s, cli, clientDeadline, srv, cli)
	aq := stopAcceptQueue()
	threads := stopThreads()
	srv.mu.Lock()
	srv.res.AcceptQueue = aq
	srv.res.Threads = threads
	srv.mu.Unlock()
	cli.cut = ctx.Err() != nil

	// The client first, then the server, whose final statistics then
	// cover the whole run.
	err = errors.Join(err, cli.stop(), srv.stop())
	return srv.res, cli.res, err
}

// runAlone runs the client of a spec without a server: started, sampled,
// waited for within its deadline, stopped if it overstays.
func runAlone(ctx context.Context, s *validSpec, pr pair, cli *side, clientDeadline time.Time, onUp func(labUp)) (*ProcResult, error) {
	argv, env := s.Client.expand(pr.addr, pr.control)
	if err := cli.start(ctx, recorded(s.Client, pr), proc.Spec{Argv: argv, Env: env, NoListen: true, Grace: s.Grace}); err != nil {
		return nil, err
	}
	if onUp != nil {
		onUp(labUp{ClientPid: cli.p.Pid()})
	}
	err := awaitClient(ctx, s, cli, clientDeadline, cli)
	cli.cut = ctx.Err() != nil
	return cli.res, errors.Join(err, cli.stop())
}

// awaitClient samples sides while the client runs, until it exits, its
// deadline passes (it is then stopped by the caller and marked timed out)
// or ctx ends (the error says the run was interrupted). The sampler takes
// a last sample of every side on its way out.
func awaitClient(ctx context.Context, s *validSpec, cli *side, clientDeadline time.Time, sides ...*side) error {
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() {
		defer sampling.Done()
		sampleLoop(s.SampleEvery, stopSampling, sides...)
	}()
	t := time.NewTimer(time.Until(clientDeadline))
	defer t.Stop()
	var err error
	select {
	case <-cli.p.Done():
	case <-t.C:
	case <-ctx.Done():
		err = fmt.Errorf("run interrupted: %w", context.Cause(ctx))
	}
	close(stopSampling)
	sampling.Wait()
	return err
}

// recorded is the argv a ProcResult shows: placeholders replaced, a role
// still "@role".
func recorded(p Proc, pr pair) []string {
	r := strings.NewReplacer(AddrPlaceholder, pr.addr, ControlPlaceholder, pr.control)
	out := make([]string, len(p.Argv))
	for i, a := range p.Argv {
		out[i] = r.Replace(a)
	}
	return out
}

// start pins the side's worker thread and starts the process from it, then
// records every thread's CPU mask.
func (sd *side) start(ctx context.Context, argv []string, ps proc.Spec) error {
	// Forked from the worker's thread: the child inherits its pinning and
	// network namespace, and the thread lives until the child is reaped.
	ps.InheritThread = true
	err := sd.w.do(func() error {
		if err := pinThread(sd.cpus); err != nil {
			return err
		}
		p, err := proc.Start(ctx, ps)
		sd.p = p
		return err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", sd.name, err)
	}
	sd.res = &ProcResult{Argv: argv, Pid: sd.p.Pid(), Placement: sd.cpus, AffinityOK: true}
	if a, err := sd.p.Affinity(); err == nil {
		sd.res.AffinityStart = a
		sd.res.AffinityEnd = a
		sd.checkAffinity(a)
	}
	return nil
}

// releaseCPULimit records the kernel's account of the server's CPU cap and
// removes its cgroup; the server has been reaped.
func (sd *side) releaseCPULimit(lim *proc.CPULimit) error {
	st, err := lim.Stat()
	sd.mu.Lock()
	sd.res.CPULimit = &CPULimitRecord{Share: lim.Share, PeriodMs: float64(lim.Period) / float64(time.Millisecond),
		Cgroup: lim.Dir, CgroupVersion: lim.Version, Processes: lim.Procs,
		Periods: st.Periods, Throttled: st.Throttled, ThrottledS: st.ThrottledTime.Seconds()}
	sd.mu.Unlock()
	return errors.Join(err, lim.Release())
}

// checkAffinity records each thread's mask in a (ProcResult.Masks) and
// clears AffinityOK, naming the thread and both masks, if a thread of a
// pinned process is on any other mask than the side's set, or, for a
// process that pins its loops, than the set or one CPU of it (which loop
// may be on which CPU is checked once the process has reported its
// loops: checkLoopPlacement).
func (sd *side) checkAffinity(a []proc.ThreadAffinity) {
	sd.res.noteMasks(a)
	if !sd.cpus.Pinned() {
		return
	}
	want := sd.cpus.String()
	for _, t := range a {
		if t.CPUList == want {
			continue
		}
		if one, err := strconv.Atoi(t.CPUList); err == nil && sd.pinsLoops && sd.cpus.Contains(one) {
			continue
		}
		sd.res.AffinityOK = false
		sd.res.noteBad(fmt.Sprintf("thread %d on CPUs %s, want its side's set %s", t.Tid, t.CPUList, want))
	}
}

// sample records one /proc sample of the side's process, if it lives.
func (sd *side) sample() {
	if isDone(sd.p) {
		return
	}
	u, uerr := sd.p.Usage()
	a, aerr := sd.p.Affinity()
	var own *OwnTime
	if st, err := sd.p.GroupSchedstat(); err == nil && uerr == nil {
		own = &OwnTime{RunNs: uint64(st.RunNs), WaitNs: uint64(st.WaitNs), UserNs: uint64(u.UserNs), Slices: uint64(st.Slices)}
	}
	sd.mu.Lock()
	defer sd.mu.Unlock()
	if uerr == nil {
		peak := max(sd.res.Sampled.PeakRSS, u.PeakRSS)
		sd.res.Sampled = u
		sd.res.Sampled.PeakRSS = peak
		sd.res.Samples++
	}
	if aerr == nil {
		sd.res.AffinityEnd = a
		sd.checkAffinity(a)
	}
	sd.res.noteTicks(own)
}

// stop stops the side's process (SIGTERM, grace, SIGKILL; nothing if it
// has exited) and records how it ended. A client stopped this way did not
// exit in its time.
func (sd *side) stop() error {
	self := isDone(sd.p)
	e, err := sd.p.Stop()
	sd.mu.Lock()
	defer sd.mu.Unlock()
	r := sd.res
	r.SelfExit = self
	r.TimedOut = sd.name == "client" && !self && !sd.cut
	r.Code, r.Signal, r.Killed = e.Code, e.Signal, e.Killed
	r.Stdout, r.StdoutTruncated, r.StderrTail = e.Stdout, e.StdoutTruncated, e.StderrTail
	r.UserNs, r.SysNs, r.MaxRSS = e.UserNs, e.SysNs, e.MaxRSS
	r.Elapsed = e.Elapsed
	return err
}

// sampleLoop samples both sides every period until stop is closed, then
// once more.
func sampleLoop(period time.Duration, stop <-chan struct{}, sides ...*side) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		for _, sd := range sides {
			sd.sample()
		}
		select {
		case <-stop:
			for _, sd := range sides {
				sd.sample()
			}
			return
		case <-t.C:
		}
	}
}

func isDone(p *proc.Process) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// dialUntil dials each address from the calling thread (so from its network
// namespace) until it accepts, within bound.
func dialUntil(ctx context.Context, addrs []string, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var d net.Dialer
	backoff := time.Millisecond
	for _, addr := range addrs {
		for {
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				c.Close()
				break
			}
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("%s not accepting within %v (last: %v): %w", addr, bound, err, context.Cause(ctx))
			case <-t.C:
			}
			backoff = min(2*backoff, 50*time.Millisecond)
		}
	}
	return nil
}
