//go:build linux

package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/reactors"
)

// TestPlaceSide: each loop of a pinned side is verified when its thread
// ended on its CPU; a loop whose thread was seen on the other CPU (a
// fault planted in the samples) is not, nor is its side; an unpinned
// side is never verified. A reference design's loops are named by role.
func TestPlaceSide(t *testing.T) {
	set := lab.ListPlacement(0, 1)
	pins := []loopPin{{Index: 0, Tid: 10, CPU: 0}, {Index: 1, Tid: 11, CPU: 1}}
	roles := loopRoles(reactors.PrioThread, reactors.DefaultConfig())
	if !slices.Equal(roles, []string{"data", "control"}) {
		t.Fatalf("prio-thread's loop roles %q, want data and control", roles)
	}
	right := &lab.ProcResult{Placement: set, AffinityOK: true, Masks: []lab.ThreadMasks{{Tid: 9, Masks: []string{"0-1"}}, {Tid: 10, Masks: []string{"0-1", "0"}}, {Tid: 11, Masks: []string{"1"}}}}
	side, problems := placeSide("server", right, pins, roles)
	if len(problems) != 0 || !side.Verified || len(side.Loops) != 2 || !side.Loops[0].Verified || !side.Loops[1].Verified ||
		side.Loops[0].Role != "data" || side.Loops[1].Role != "control" {
		t.Errorf("a right placement: %+v, problems %q", side, problems)
	}
	wrong := &lab.ProcResult{Placement: set, AffinityOK: true, Masks: []lab.ThreadMasks{{Tid: 10, Masks: []string{"0"}}, {Tid: 11, Masks: []string{"0"}}}}
	side, problems = placeSide("server", wrong, pins, roles)
	if len(problems) == 0 || side.Verified || !side.Loops[0].Verified || side.Loops[1].Verified {
		t.Errorf("loop 1 on loop 0's CPU: %+v, problems %q; want loop 1 and the side unverified, loop 0 verified", side, problems)
	}
	unpinned := &lab.ProcResult{AffinityOK: true, Masks: []lab.ThreadMasks{{Tid: 10, Masks: []string{"0-1"}}}}
	side, _ = placeSide("loadgen", unpinned, []loopPin{{Index: 0, Tid: 10, CPU: -1}}, nil)
	if side.Verified || side.Loops[0].Verified {
		t.Errorf("an unpinned side: %+v; want nothing verified", side)
	}
	for _, tc := range []struct {
		d     reactors.DesignName
		want  []string
		tweak func(*reactors.Config)
	}{
		{reactors.LT, []string{"data and control"}, nil},
		{reactors.OneShot, []string{"worker", "worker", "worker"}, func(c *reactors.Config) { c.Threads = 3 }},
	} {
		cfg := reactors.DefaultConfig()
		if tc.tweak != nil {
			tc.tweak(&cfg)
		}
		if got := loopRoles(tc.d, cfg); !slices.Equal(got, tc.want) {
			t.Errorf("%s: roles %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestDescribeLoops: the summary names each side's loops and their CPUs,
// says when loops share a CPU for want of CPUs, and names a reference
// design's loops by role.
func TestDescribeLoops(t *testing.T) {
	gen := func(set lab.SidePlacement, cpus ...int) *SidePlaced {
		s := &SidePlaced{Placement: set}
		for i, c := range cpus {
			s.Loops = append(s.Loops, LoopPlaced{Loop: i, CPU: c})
		}
		return s
	}
	srv := gen(lab.ListPlacement(0, 1), 0, 1)
	srv.Loops[0].Role, srv.Loops[1].Role = "data", "control"
	shared := gen(lab.ListPlacement(0), 0, 0)
	shared.Loops[0].Role, shared.Loops[1].Role = "data", "control"
	for _, tc := range []struct {
		side *SidePlaced
		want string
	}{
		{gen(lab.ListPlacement(1), 1), "1 loop"},
		{gen(lab.ListPlacement(1), 1, 1), "2 loops (both on CPU 1: more loops than CPUs)"},
		{gen(lab.ListPlacement(1), 1, 1, 1), "3 loops (all 3 on CPU 1: more loops than CPUs)"},
		{gen(lab.ListPlacement(2, 3), 2, 3), "2 loops (loop 0 on CPU 2, loop 1 on CPU 3)"},
		{gen(lab.ListPlacement(2, 3), 2, 3, 2, 3), "4 loops (loops 0 and 2 on CPU 2, loops 1 and 3 on CPU 3; more loops than CPUs)"},
		{gen(lab.SidePlacement{}, -1, -1), "2 loops"},
		{srv, "2 loops (data loop on CPU 0, control loop on CPU 1)"},
		{shared, "2 loops (data loop and control loop both on CPU 0: more loops than CPUs)"},
		{&SidePlaced{Placement: lab.ListPlacement(0)}, ""},
	} {
		if got := describeLoops(tc.side); got != tc.want {
			t.Errorf("describeLoops(%+v) = %q, want %q", tc.side.Loops, got, tc.want)
		}
	}
	p := &lab.ProcResult{Placement: lab.ListPlacement(1), AffinityOK: true}
	good := gen(lab.ListPlacement(1), 1, 1)
	good.Verified = true
	if got, want := describeSide("loadgen", p, good), "loadgen on CPU 1, 2 loops (both on CPU 1: more loops than CPUs) (every thread verified)"; got != want {
		t.Errorf("describeSide = %q, want %q", got, want)
	}
	bad := gen(lab.ListPlacement(1), 1, 1) // Verified false: a loop was off its CPU
	if got := describeSide("loadgen", p, bad); !strings.Contains(got, "a loop thread was not where it was put") {
		t.Errorf("describeSide of an unverified side = %q", got)
	}
}

// checkSummaryNamesLoops reads back the files of a cell TestCellMoreLoopsThanCPUs
// ran (prio-thread on CPU srvCPU, the load generator's two loops on CPU
// genCPU): summary.json holds both sides' loops, each verified on its
// side's CPU, with the server's named data and control; summary.txt says
// so; the serve flag the placement added (--loop-cpus) is in the server's
// argv, not in the target's label.
func checkSummaryNamesLoops(t *testing.T, res *CellResult, srvCPU, genCPU int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(res.Cell.Dir, CellSummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var back CellResult
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	p := back.Placed
	if p == nil || p.Server == nil || p.Loadgen == nil {
		t.Fatalf("summary.json: placed = %+v", p)
	}
	for _, side := range []struct {
		name  string
		sp    *SidePlaced
		cpu   int
		roles []string
	}{{"server", p.Server, srvCPU, []string{"data", "control"}}, {"loadgen", p.Loadgen, genCPU, []string{"", ""}}} {
		if !side.sp.Verified || len(side.sp.Loops) != 2 {
			t.Errorf("%s: %+v; want 2 loops, verified", side.name, side.sp)
			continue
		}
		for i, l := range side.sp.Loops {
			if !l.Verified || l.CPU != side.cpu || l.Role != side.roles[i] || l.Tid <= 0 {
				t.Errorf("%s loop %d: %+v; want verified on CPU %d, role %q", side.name, i, l, side.cpu, side.roles[i])
			}
		}
	}
	text, err := os.ReadFile(filepath.Join(res.Cell.Dir, CellReportFile))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(text), "\n")
	for _, want := range []string{
		"loadgen on CPU " + strconv.Itoa(genCPU) + ", 2 loops (both on CPU " + strconv.Itoa(genCPU) + ": more loops than CPUs) (every thread verified)",
		"server on CPU " + strconv.Itoa(srvCPU) + ", 2 loops (data loop and control loop both on CPU " + strconv.Itoa(srvCPU) + ": more loops than CPUs) (every thread verified)",
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("summary.txt does not say %q:\n%s", want, text)
		}
	}
	if strings.Contains(first, "loop-cpus") || len(back.Cell.ServeArgs) != 0 {
		t.Errorf("the label %q (serve args %q) holds a flag the harness added", first, back.Cell.ServeArgs)
	}
	if !slices.Contains(back.Lab.Server.Argv, "--loop-cpus="+strconv.Itoa(srvCPU)) {
		t.Errorf("the server's argv %q lacks the --loop-cpus the placement added", back.Lab.Server.Argv)
	}
}
