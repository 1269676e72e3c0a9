//go:build linux

package loadgen_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
)

// childEnv makes the test binary serve a reference reactor instead of
// running tests: "lt" (or another design name).
const childEnv = "LOADGEN_TEST_REACTOR"

func TestMain(m *testing.M) {
	if design := os.Getenv(childEnv); design != "" {
		os.Exit(serveChild(reactors.Design(design)))
	}
	os.Exit(m.Run())
}

// serveChild runs a reference reactor on two free loopback ports, prints
// "data=ADDR control=ADDR" on stdout, and exits when the reactor stops (a
// STOP frame) or when stdin reaches EOF (the parent is done or gone).
func serveChild(design reactors.Design) int {
	cfg := reactors.DefaultConfig()
	cfg.Listen, cfg.ControlListen = "127.0.0.1:0", "127.0.0.1:0"
	r, err := reactors.New(design, cfg)
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
func startReactor(t testing.TB, design reactors.Design) *child {
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
	if err := cmd.Start(); err != nil {
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
