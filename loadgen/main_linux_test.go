//go:build linux

package loadgen_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/reactors/designs"
)

// childEnv makes the test binary serve a reference reactor instead of
// running tests: "lt" (or another design name).
const childEnv = "LOADGEN_TEST_REACTOR"

func TestMain(m *testing.M) {
	if design := os.Getenv(childEnv); design != "" {
		os.Exit(serveChild(reactors.DesignName(design)))
	}
	if cfg := os.Getenv(generatorEnv); cfg != "" {
		os.Exit(generatorChild(cfg))
	}
	os.Exit(m.Run())
}

// serveChild runs a reference reactor on two free loopback ports, prints
// "data=ADDR control=ADDR" on stdout, and exits when the reactor stops (a
// STOP frame) or when stdin reaches EOF (the parent is done or gone).
func serveChild(design reactors.DesignName) int {
	ensureProcs()
	cfg := reactors.DefaultConfig()
	cfg.Listen, cfg.ControlListen = "127.0.0.1:0", "127.0.0.1:0"
	r, err := designs.New(design, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	r.Start()
	fmt.Printf("data=%s control=%s\n", r.Addr(), r.ControlAddr())
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(eof)
	}()
	select {
	case <-r.Done():
	case <-eof:
		r.Stop()
	}
	if _, err := r.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// child is a reference reactor in a child process.
type child struct {
	Data, Control string
	cmd           *exec.Cmd
	stdin         io.WriteCloser
	done          chan struct{}
	stderr        strings.Builder
}

func (c *child) Pid() int { return c.cmd.Process.Pid }

// Exited is closed when the child process has exited.
func (c *child) Exited() <-chan struct{} { return c.done }

// startReactor starts design in a child process and stops it at the end of
// the test.
func startReactor(t testing.TB, design reactors.DesignName) *child {
	t.Helper()
	return startReactorOn(t, design, -1)
}

// startReactorOn is startReactor with every thread of the child on CPU cpu
// (cpu < 0: anywhere).
func startReactorOn(t testing.TB, design reactors.DesignName, cpu int) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(design))
	c := &child{cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &c.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := startOn(cmd, cpu); err != nil {
		t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.stdin.Close()
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-c.done
			t.Errorf("reactor child did not exit within 5s of its stdin closing; killed")
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reactor child: %v; stderr:\n%s", err, c.stderr.String())
	}
	if _, err := fmt.Sscanf(line, "data=%s control=%s", &c.Data, &c.Control); err != nil {
		t.Fatalf("reactor child said %q: %v", line, err)
	}
	return c
}

// startOn starts cmd with every thread of the new process on CPU cpu (cpu <
// 0: wherever the scheduler likes). A child inherits the affinity of the
// thread that forks it, and its Go runtime sizes GOMAXPROCS from it, as in
// the lab: a fresh goroutine locks its thread, pins it and starts cmd, and
// returns still locked, so that Go discards the pinned thread.
func startOn(cmd *exec.Cmd, cpu int) error {
	if cpu < 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			errc <- fmt.Errorf("pinning to CPU %d: %w", cpu, os.NewSyscallError("sched_setaffinity", err))
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// ensureProcs gives a child at least two Ps whatever CPUs it is pinned to,
// as the lab does (docs/ARCHITECTURE.md, "Harness"): its locked loop thread needs
// a P, and the rest of the process another.
func ensureProcs() {
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
}
