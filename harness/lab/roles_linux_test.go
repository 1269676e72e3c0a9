//go:build linux

package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The test binary plays every process of a run: these roles are the test
// servers and clients, and "test-harness" is a harness of its own (for the
// tests that must kill one, or run one as another user).
func init() {
	RegisterRole("test-echo", echoRole)
	RegisterRole("test-client", clientRole)
	RegisterRole("test-sleep", func([]string) int { time.Sleep(time.Hour); return 0 })
	RegisterRole("test-harness", harnessRole)
	RegisterRole("test-userns-probe", usernsProbeRole)
	RegisterRole("test-args", func(args []string) int {
		b, _ := json.Marshal(args)
		fmt.Printf("%s %q\n", b, os.Getenv(RoleEnv))
		return 7
	})
}

func TestMain(m *testing.M) {
	RunRoleIfChild()
	// Under -race every process sleeps 1 s at exit (GORACE atexit_sleep_ms)
	// to let late reports out; with a dozen processes per test that is
	// most of the run. The children inherit this.
	if _, ok := os.LookupEnv("GORACE"); !ok {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	os.Exit(m.Run())
}

// whereami is what a test role reports about the namespace it runs in.
type whereami struct {
	Pid       int    `json:"pid"`
	Netns     string `json:"netns"`
	Somaxconn string `json:"somaxconn"`
	PortRange string `json:"port_range"`
}

func here() whereami {
	n, _ := os.Readlink("/proc/self/ns/net")
	s, _ := os.ReadFile("/proc/sys/net/core/somaxconn")
	r, _ := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	return whereami{Pid: os.Getpid(), Netns: n, Somaxconn: strings.TrimSpace(string(s)),
		PortRange: strings.Join(strings.Fields(string(r)), " ")}
}

// echoStats is what test-echo prints on SIGTERM.
type echoStats struct {
	whereami
	Conns int64 `json:"conns"`
}

// echoRole is a byte-echo server on $REACTORLAB_LISTEN (and --control). It
// prints its stats as JSON and exits 0 on SIGTERM, unless --ignore-term.
// --fork starts a grandchild (test-sleep) first, in the server's process
// group, or with --escape in a session of its own; --no-listen never
// listens; --exit-after ends it by itself (with --exit-code) that long
// after its first echo.
func echoRole(args []string) int {
	fs := flag.NewFlagSet("test-echo", flag.ContinueOnError)
	control := fs.String("control", "", "second address to serve")
	fork := fs.Bool("fork", false, "start a grandchild first")
	escape := fs.Bool("escape", false, "with --fork: the grandchild escapes into a session of its own")
	ignoreTerm := fs.Bool("ignore-term", false, "ignore SIGTERM")
	noListen := fs.Bool("no-listen", false, "never listen")
	exitAfter := fs.Duration("exit-after", 0, "exit by itself this long after the first echo")
	exitCode := fs.Int("exit-code", 0, "the status of --exit-after")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if *fork {
		c := exec.Command(selfExe)
		c.Env = append(os.Environ(), RoleEnv+"=test-sleep")
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: *escape}
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fork:", err)
			return 1
		}
	}
	if *noListen {
		time.Sleep(time.Hour)
	}
	var conns atomic.Int64
	echoed := make(chan struct{}, 1)
	for _, addr := range []string{os.Getenv("REACTORLAB_LISTEN"), *control} {
		if addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "listen:", err)
			return 1
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				conns.Add(1)
				go func() {
					if n, _ := io.Copy(c, c); n > 0 {
						select {
						case echoed <- struct{}{}:
						default:
						}
					}
					c.Close()
				}()
			}
		}()
	}
	var after <-chan time.Time
	for {
		select {
		case <-term:
		case <-echoed:
			if *exitAfter > 0 && after == nil {
				after = time.After(*exitAfter)
			}
			continue
		case <-after:
			return *exitCode
		}
		break
	}
	json.NewEncoder(os.Stdout).Encode(echoStats{whereami: here(), Conns: conns.Load()})
	return 0
}

// clientReport is what test-client prints.
type clientReport struct {
	whereami
	Local string `json:"local"`
	Echo  string `json:"echo"`
}

// clientRole dials each address given, exchanges a few bytes, prints a
// clientReport, holds for --hold and exits with --exit.
func clientRole(args []string) int {
	fs := flag.NewFlagSet("test-client", flag.ContinueOnError)
	hold := fs.Duration("hold", 50*time.Millisecond, "stay this long after the exchange")
	code := fs.Int("exit", 0, "exit status")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rep := clientReport{whereami: here()}
	for _, addr := range fs.Args() {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dial:", err)
			return 1
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 5)
		_, err = io.WriteString(c, "hello")
		if err == nil {
			_, err = io.ReadFull(c, buf)
		}
		c.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "exchange:", err)
			return 1
		}
		rep.Local, rep.Echo = c.LocalAddr().String(), string(buf)
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	time.Sleep(*hold)
	return *code
}

// harnessOut is one line of test-harness's output.
type harnessOut struct {
	Up          *labUp  `json:"up,omitempty"`
	Result      *Result `json:"result,omitempty"`
	Error       string  `json:"error,omitempty"`
	Unavailable bool    `json:"unavailable,omitempty"`
	Done        bool    `json:"done,omitempty"`
}

// harnessRole runs Run once per Spec given as a JSON argument, printing
// an "up" line as soon as both processes run, a result line after each run,
// and a "done" line last. --max-netns=N first sets this user namespace's
// user.max_net_namespaces to N, so the kernel refuses every network
// namespace beyond the Nth made below it (ENOSPC): a genuine refusal, not a
// simulated one.
func harnessRole(args []string) int {
	fs := flag.NewFlagSet("test-harness", flag.ContinueOnError)
	maxNetns := fs.Int("max-netns", -1, "allow this many network namespaces here (-1: leave the limit)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	out := json.NewEncoder(os.Stdout)
	defer out.Encode(harnessOut{Done: true})
	if *maxNetns >= 0 {
		if err := os.WriteFile("/proc/sys/user/max_net_namespaces", []byte(strconv.Itoa(*maxNetns)), 0); err != nil {
			out.Encode(harnessOut{Error: "limit: " + err.Error()})
			return 0
		}
	}
	testHooks.up = func(up labUp) { out.Encode(harnessOut{Up: &up}) }
	for _, a := range fs.Args() {
		var spec Spec
		if err := json.Unmarshal([]byte(a), &spec); err != nil {
			out.Encode(harnessOut{Error: "spec: " + err.Error()})
			return 0
		}
		res, err := Run(context.Background(), spec)
		o := harnessOut{Result: res}
		if err != nil {
			o.Error, o.Unavailable = err.Error(), errors.Is(err, ErrUnavailable)
		}
		out.Encode(o)
	}
	return 0
}

// harnessLines decodes test-harness's output, line by line, into ch.
func harnessLines(t *testing.T, r io.Reader, ch chan<- harnessOut) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var o harnessOut
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			o.Error = fmt.Sprintf("undecodable line %q: %v", sc.Text(), err)
		}
		ch <- o
	}
	close(ch)
}

// usernsProbeRole starts a child (the role lab-nop, which exits at once)
// that calls unshare(CLONE_NEWUSER|CLONE_NEWNET) before it executes, as
// this process's user, and prints "ok" or the kernel's refusal. Go makes
// that call in the forked child, which has one thread (a Go process has
// many, and the kernel refuses them a new user namespace), and without uid
// maps: nothing of the harness is involved.
func usernsProbeRole([]string) int {
	cmd := exec.Command(selfExe)
	cmd.Env = append(os.Environ(), RoleEnv+"="+nopRole)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET}
	if err := cmd.Run(); err != nil {
		fmt.Printf("unshare(CLONE_NEWUSER|CLONE_NEWNET) in a child: %v\n", err)
		return 0
	}
	fmt.Println("ok")
	return 0
}
