//go:build linux

package proc

import (
	"os"
	"testing"
)

// TestParseProcStat reads a stat line whose command name holds spaces and
// parentheses, and refuses truncated ones.
func TestParseProcStat(t *testing.T) {
	line := "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10 18446744073709551615\n"
	p, ok := parseProcStat(4242, []byte(line))
	want := ProcStat{Pid: 4242, PPid: 17, Pgrp: 4242, Comm: "a (b) c", State: "S", Start: "98765"}
	if !ok || p != want {
		t.Fatalf("parse = %+v, %v; want %+v", p, ok, want)
	}
	for _, bad := range []string{"", "4242 a S 1 1", "4242 (x) S 17 4242"} {
		if _, ok := parseProcStat(4242, []byte(bad)); ok {
			t.Errorf("parsed %q", bad)
		}
	}
}

// TestProcessesFindsThisProcess: the scan sees this test process, living,
// with its parent.
func TestProcessesFindsThisProcess(t *testing.T) {
	procs, err := Processes()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.Pid == os.Getpid() {
			if p.PPid != os.Getppid() || !p.Living() {
				t.Fatalf("this process as scanned: %+v (parent %d)", p, os.Getppid())
			}
			return
		}
	}
	t.Fatalf("%d processes scanned, this one (%d) not among them", len(procs), os.Getpid())
}
