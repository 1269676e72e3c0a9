//go:build linux

package lab

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/harness/proc"
)

// A setup step that fails for another reason than the kernel refusing
// namespaces is a broken lab: an error in every mode, never a fallback to
// loopback, never ErrUnavailable (which would make needLab skip). The
// faults are real: the kernel itself refuses the over-long veth peer name
// (ERANGE) and the malformed port range (EINVAL, an errno that a refused
// namespace also gives: the step, not the errno alone, decides).
func TestBrokenSetupIsAnError(t *testing.T) {
	needLab(t)
	noGoroutineLeak(t)
	t.Cleanup(func() { testHooks.brk = "" })
	for _, c := range []struct{ brk, step string }{
		{breakVeth, "create veth"},
		{breakSysctl, "set sysctls in the server's namespace"},
	} {
		t.Run(c.brk, func(t *testing.T) {
			testHooks.brk = c.brk
			defer func() { testHooks.brk = "" }()
			err := Check(context.Background())
			if err == nil || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), c.step) {
				t.Errorf("Check: %v; want a plain error naming %q", err, c.step)
			}
			if skip, fail := labVerdict(err); skip != "" || fail == nil {
				t.Errorf("needLab would skip (%q) on a broken lab", skip)
			}
			for _, mode := range []Mode{ModeAuto, ModeLab} {
				res, err := Run(context.Background(), echoSpec(mode, Unpinned))
				if err == nil || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), c.step) {
					t.Errorf("%s: Run: %v; want a plain error naming %q", mode, err, c.step)
				}
				if res == nil {
					t.Fatalf("%s: no result", mode)
				}
				if res.Mode != ModeLab || res.Fallback != "" || res.Valid || res.Server != nil || len(res.Audit.Diffs) != 0 {
					t.Errorf("%s: want an invalid lab run, no fallback, nothing started, nothing left:\n%s", mode, dump(res))
				}
			}
		})
	}
}

// needLab skips only where the kernel refuses a lab and nothing says one
// must work; it fails on a broken lab, and on a refused one where a lab is
// required.
func TestNeedLabVerdict(t *testing.T) {
	refused := errors.Join(ErrUnavailable, errors.New("clone: operation not permitted"))
	broken := errors.New("setup failed: create veth: invalid argument")

	t.Setenv(RequireEnv, "1")
	if skip, fail := labVerdict(refused); skip != "" || fail == nil {
		t.Errorf("%s=1, refused: skip %q, fail %v; want a failure", RequireEnv, skip, fail)
	}
	t.Setenv(RequireEnv, "0")
	if skip, fail := labVerdict(refused); skip == "" || fail != nil {
		t.Errorf("%s=0, refused: skip %q, fail %v; want a skip", RequireEnv, skip, fail)
	}
	if skip, fail := labVerdict(broken); skip != "" || fail == nil {
		t.Errorf("%s=0, broken: skip %q, fail %v; want a failure", RequireEnv, skip, fail)
	}
	if skip, fail := labVerdict(nil); skip != "" || fail != nil {
		t.Errorf("a working lab: skip %q, fail %v", skip, fail)
	}

	os.Unsetenv(RequireEnv) // t.Setenv restores it
	uidMap, _ := os.ReadFile("/proc/self/uid_map")
	initialRoot := os.Geteuid() == 0 && strings.Join(strings.Fields(string(uidMap)), " ") == "0 0 4294967295"
	if must, why := Required(); must != initialRoot {
		t.Errorf("Required() = %v (%s) as uid %d with uid_map %q", must, why, os.Geteuid(), uidMap)
	}
	if skip, fail := labVerdict(refused); initialRoot && (skip != "" || fail == nil) {
		t.Errorf("root in the initial user namespace, refused: skip %q, fail %v; want a failure", skip, fail)
	}
}

// The run child audits its own threads once its workers have ended, and
// reports it: a worker's thread that went back to Go's pool (the planted
// fault) in a lab side's network namespace, or on a pinned mask, makes the
// run invalid, with the thread named. Without the fault, the audit is
// there and clean.
func TestRunChildAuditsItsThreads(t *testing.T) {
	noGoroutineLeak(t)
	t.Cleanup(func() { testHooks.brk = "" })
	for _, c := range []struct {
		mode Mode
		want string
	}{
		{ModeLab, "in network namespace"},
		{ModeLoopback, "is on CPUs"},
	} {
		t.Run(string(c.mode), func(t *testing.T) {
			if c.mode == ModeLab {
				needLab(t)
			}
			cpus := twoCPUs(t)
			if c.mode == ModeLoopback && !cpus.Pinned() {
				t.Skip("one CPU: a loopback worker changes no mask")
			}
			testHooks.brk = ""
			res := mustRun(t, echoSpec(c.mode, cpus))
			a := res.Audit.Child
			if !res.Valid || a == nil || a.Threads < 2 || !strings.HasPrefix(a.Netns, "net:[") || len(a.CPULists) == 0 || len(a.Diffs) != 0 {
				t.Fatalf("want a valid run with the run child's audit of itself:\n%s", dump(res))
			}

			testHooks.brk = breakWorkers
			res, err := Run(context.Background(), echoSpec(c.mode, cpus))
			testHooks.brk = ""
			if err != nil {
				t.Fatal(err)
			}
			inv := strings.Join(res.Invalid, "\n")
			if res.Valid || !strings.Contains(inv, "leak audit: run child: thread ") || !strings.Contains(inv, c.want) {
				t.Fatalf("workers' threads back in Go's pool: want an invalid run naming a thread %s:\n%s", c.want, dump(res))
			}
			t.Logf("invalid, as it must be: %q", res.Invalid)
		})
	}
}

// A process of the run that escapes its process group (a server's
// grandchild in a session of its own) outlives the server's stop: in the
// lab, the lab child (PID 1, to which it is orphaned) finds it still
// running; on loopback, the keeper (a child subreaper, to which it is
// orphaned) kills it. Either way the run is invalid, the process named,
// and nothing is left behind.
func TestEscapedProcessIsALeak(t *testing.T) {
	noGoroutineLeak(t)
	catchOrphans(t)
	for _, c := range []struct {
		mode Mode
		want string
	}{
		{ModeLab, "leak audit: run child: process "},
		{ModeLoopback, "leak audit: keeper: process "},
	} {
		t.Run(string(c.mode), func(t *testing.T) {
			if c.mode == ModeLab {
				needLab(t)
			}
			spec := echoSpec(c.mode, Unpinned)
			spec.Server.Argv = []string{"@test-echo", "--fork", "--escape"}
			res, err := Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			inv := strings.Join(res.Invalid, "\n")
			if res.Valid || !strings.Contains(inv, c.want) {
				t.Fatalf("want an invalid run naming the escaped process (%q):\n%s", c.want, dump(res))
			}
			if strings.Contains(inv, "a descendant of this one, is still running") {
				t.Errorf("the escaped process outlived Run:\n%s", inv)
			}
			t.Logf("invalid, as it must be: %q", res.Invalid)
		})
	}
}

// catchOrphans makes this process a child subreaper for the test, so that
// a process of a run that escapes every other guard (as one may when the
// code under test is broken) is orphaned to it rather than to init, and
// kills and reaps each such orphan, a child of this process playing a test
// role, at the end of the test.
func catchOrphans(t *testing.T) {
	t.Helper()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("become a child subreaper: %v", err)
	}
	t.Cleanup(func() {
		defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		procs, err := proc.Processes()
		if err != nil {
			t.Error(err)
			return
		}
		var orphans []proc.ProcStat
		for _, p := range procs {
			if p.PPid == os.Getpid() && strings.HasPrefix(roleOf(p.Pid), "test-") {
				orphans = append(orphans, p)
			}
		}
		reapRun(orphans)
	})
}
