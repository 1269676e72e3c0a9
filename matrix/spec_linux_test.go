//go:build linux

package matrix

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness/roles"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/cost"
)

// TestCheckTargetsNamesTheLine: a target program that is not there (as a
// path, or on $PATH) is refused at the line and field of the spec that names it: the baseline's
// for the cells that keep its command, the factor value's for a command
// a factor gives; a program under reactorlab-peers/ says how to build the
// peers.
func TestCheckTargetsNamesTheLine(t *testing.T) {
	tmp := t.TempDir()
	plain := filepath.Join(tmp, "plain")
	os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644)
	exe := filepath.Join(tmp, "srv")
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	missing := filepath.Join(tmp, "missing")
	for _, tc := range []struct {
		name, spec string
		want       string
		peers      bool
	}{
		{"baseline target", "name: x\nbaseline:\n  target:\n    cmd: '" + missing + " --listen {addr}'\n  hot: 1\n  inflight: 1\n  duration: 1s\nfactors:\n  - {name: hot, values: [2]}\n",
			"line 4: target.cmd: " + missing + ": no such file or directory", false},
		{"baseline as reactor", "name: x\nbaseline:\n  reactor: {cmd: " + plain + "}\n  hot: 1\n  inflight: 1\n  duration: 1s\n",
			"line 3: reactor.cmd: " + plain + ": not executable", false},
		{"a directory", "name: x\nbaseline: {target: {cmd: " + tmp + "}, hot: 1, inflight: 1, duration: 1s}\n",
			"line 2: target.cmd: " + tmp + ": a directory", false},
		{"factor value", "name: x\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\nfactors:\n  - name: reactor\n    values:\n      - et\n      - {cmd: " + exe + "}\n      - {cmd: ./reactorlab-peers/gnet}\n",
			"line 8: factors[0].values[2] (reactor): ./reactorlab-peers/gnet: no such file or directory", true},
		{"factor on a target's other field", "name: x\nbaseline:\n  target: {cmd: " + exe + "}\n  hot: 1\n  inflight: 1\n  duration: 1s\nfactors:\n  - name: target\n    values:\n      - {cmd: '" + missing + " --fast'}\n",
			"line 10: factors[0].values[0] (target): " + missing + ": no such file or directory", false},
		{"factor value not on $PATH", "name: x\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\nfactors:\n  - name: reactor\n    values: [et, {cmd: nosuchprog-xyz --x}]\n",
			"line 5: factors[0].values[1] (reactor): nosuchprog-xyz: executable file not found in $PATH", false},
		{"baseline target not on $PATH", "name: x\nbaseline: {target: {cmd: 'nosuchprog-xyz --listen {addr}'}, hot: 1, inflight: 1, duration: 1s}\n",
			"line 2: target.cmd: nosuchprog-xyz: executable file not found in $PATH", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			err = s.CheckTargets(Shard{})
			if err == nil || !errors.Is(err, ErrTarget) || !errors.Is(err, ErrSpec) {
				t.Fatalf("err = %v, want ErrTarget and ErrSpec", err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error\n %q\nwant prefix\n %q", err, tc.want)
			}
			if hint := strings.Contains(err.Error(), PeersBuild); hint != tc.peers {
				t.Errorf("peers hint %v, want %v: %q", hint, tc.peers, err)
			}
		})
	}
	// A program found on $PATH passes; a compound command is the shell's
	// to run (and to find missing), as reactorlab run leaves it.
	for _, cmd := range []string{"sh -c 'exit 0'", "cd / && nosuchprog-xyz {addr}", "nosuchprog-xyz {addr} | cat"} {
		s, err := Parse([]byte("name: x\nbaseline: {target: {cmd: \"" + cmd + "\"}, hot: 1, inflight: 1, duration: 1s}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CheckTargets(Shard{}); err != nil {
			t.Errorf("%s: %v, want nil", cmd, err)
		}
	}
	// A shard that does not run the cell does not need its program.
	s, err := Parse([]byte("name: x\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\nfactors:\n  - {name: reactor, values: [et, {cmd: " + missing + "}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CheckTargets(Shard{Index: 1, Count: 2}); err != nil {
		t.Errorf("shard 1/2 (et only): %v", err)
	}
}

// TestRefusesWhatTheChildWould: a value the serve role or the load
// generator would refuse at the start of every run is refused when the
// spec is read, at its line and field, with the child's own message
// (roles.CheckServe, roles.CheckLoad: what those roles print, less
// the flag's dashes) or, for a callback cost, cost.Parse's.
func TestRefusesWhatTheChildWould(t *testing.T) {
	serve := func(d reactors.DesignName, set func(*reactors.Config)) string {
		cfg := reactors.DefaultConfig()
		set(&cfg)
		err := roles.CheckServe(d, cfg)
		if err == nil {
			t.Fatalf("serve accepts the configuration")
		}
		return strings.TrimPrefix(err.Error(), "--")
	}
	load := func(set func(*loadgen.Config)) string {
		cfg := loadgen.Config{Hot: 2, InFlight: 4, Duration: time.Second}
		set(&cfg)
		err := roles.CheckLoad(cfg)
		if err == nil {
			t.Fatalf("the load generator accepts the load")
		}
		return strings.TrimPrefix(err.Error(), "--")
	}
	_, costErr := cost.Parse("50")
	for _, tc := range []struct {
		name, spec string
		at, child  string
	}{
		{"callback without a unit", strings.Replace(okBase, `callback: "0"`, "callback: 50", 1), "line 6: callback: ", costErr.Error()},
		{"workers out of range", okBase + "  workers: 100000\n", "line 8: workers: ",
			serve(reactors.LT, func(c *reactors.Config) { c.Workers = 100000 })},
		{"workers with oneshot", strings.Replace(okBase, "reactor: lt", "reactor: oneshot", 1) + "  workers: 2\n", "line 8: workers: ",
			serve(reactors.OneShot, func(c *reactors.Config) { c.Workers = 2 })},
		{"oneshot as a factor with workers", okBase + "  workers: 2\nfactors:\n  - name: reactor\n    values: [et, oneshot]\n", "line 11: factors[0].values[1] (reactor): ",
			serve(reactors.OneShot, func(c *reactors.Config) { c.Workers = 2 })},
		{"app timer too short", okBase + "  app_timer: 1us\n", "line 8: app_timer: ",
			serve(reactors.LT, func(c *reactors.Config) { c.AppTimer = time.Microsecond })},
		{"budget out of range", okBase + "  budgets: {budget-input: 0}\n", "line 8: budgets: ",
			serve(reactors.LT, func(c *reactors.Config) { c.Budgets.Input = 0 })},
		{"control probes too often", okBase + "  control_every: 5us\n", "line 8: control_every: ",
			load(func(c *loadgen.Config) { c.ControlEvery = 5 * time.Microsecond })},
		{"STOP after the end", okBase + "  stop_at: 2s\n", "line 8: stop_at: ",
			load(func(c *loadgen.Config) { c.StopAt = 2 * time.Second })},
		{"warm-up too long", okBase + "  warmup: 25h\n", "line 8: warmup: ",
			load(func(c *loadgen.Config) { c.Warmup = 25 * time.Hour })},
		{"too many in flight", strings.Replace(okBase, "inflight: 4", "inflight: 100000", 1), "line 5: inflight: ",
			load(func(c *loadgen.Config) { c.InFlight = 100000 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.spec))
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			if msg := err.Error(); !strings.HasPrefix(msg, tc.at) || !strings.Contains(msg, tc.child) {
				t.Errorf("error\n %q\nwant it to begin %q and hold the child's message\n %q", msg, tc.at, tc.child)
			}
		})
	}
}
