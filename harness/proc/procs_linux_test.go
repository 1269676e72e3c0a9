//go:build linux

package proc

import (
	"os"
	"testing"
)

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
