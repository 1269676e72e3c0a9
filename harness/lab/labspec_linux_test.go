//go:build linux

package lab

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Bad specs are refused with the field named, before anything starts; no
// input panics.
func TestSpecRefused(t *testing.T) {
	ok := echoSpec(ModeLoopback, Unpinned)
	cases := []struct {
		name string
		edit func(*Spec)
		want string
	}{
		{"empty server argv[0]", func(s *Spec) { s.Server.Argv = []string{""} }, "server: empty Argv"},
		{"empty client", func(s *Spec) { s.Client.Argv = nil }, "client: empty Argv"},
		{"empty client argv[0]", func(s *Spec) { s.Client.Argv = []string{""} }, "client: empty Argv"},
		{"unknown role", func(s *Spec) { s.Server.Argv = []string{"@nope"} }, `no role "nope"`},
		{"internal role", func(s *Spec) { s.Client.Argv = []string{"@lab"} }, `the role "lab" is the harness's own`},
		{"bad env", func(s *Spec) { s.Client.Env = []string{"NOEQUALS"} }, `env "NOEQUALS"`},
		{"bad mode", func(s *Spec) { s.Mode = "cloud" }, `mode "cloud"`},
		{"negative grace", func(s *Spec) { s.Grace = -time.Second }, "grace -1s is negative"},
		{"negative server cpu", func(s *Spec) { s.ServerCPU = -0.5 }, "server_cpu -0.5: want a number of CPUs, 0.05..1024"},
		{"server cpu below the least", func(s *Spec) { s.ServerCPU = 0.01 }, "server_cpu 0.01: want a number of CPUs, 0.05..1024"},
		{"server cpu too many", func(s *Spec) { s.ServerCPU = 5000 }, "server_cpu 5000: want a number of CPUs, 0.05..1024"},
		{"server cpu without a server", func(s *Spec) { s.Server.Argv = nil; s.ServerCPU = 0.5 }, "server_cpu set, but there is no server"},
		{"short timeout", func(s *Spec) { s.Timeout = time.Second }, "timeout 1s leaves the client no time"},
		{"both on CPU 0", func(s *Spec) { s.Placement = Placement{Server: ListPlacement(0), Client: ListPlacement(0)} }, "both sides on CPU 0"},
		{"sets overlap", func(s *Spec) { s.Placement = Placement{Server: ListPlacement(0, 1), Client: ListPlacement(1, 2)} }, "CPU 1 is in both the server's set and the loadgen's"},
		{"CPU not allowed", func(s *Spec) { s.Placement = Placement{Server: ListPlacement(maxCPU - 1)} }, "server: CPU 1023 is not one this process may use"},
		{"count too large", func(s *Spec) { s.Placement = Placement{Server: CountPlacement(maxCPU)} }, "server: count:1024, but only"},
		{"host sysctl", func(s *Spec) { s.Sysctls = map[string]string{"kernel.panic": "1"} }, `sysctl "kernel.panic"`},
		{"path in sysctl", func(s *Spec) { s.Sysctls = map[string]string{"net/../../kernel/x": "1"} }, "want a net.* key"},
		{"sysctl newline", func(s *Spec) { s.Sysctls = map[string]string{"net.core.somaxconn": "1\n2"} }, "want one non-empty line"},
		{"huge argv", func(s *Spec) { s.Client.Argv = append(s.Client.Argv, strings.Repeat("x", maxSpecSize)) }, "bytes as JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ok
			c.edit(&s)
			res, err := Run(context.Background(), s)
			if err == nil || res != nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Run = %v, %v; want nil and an error containing %q", res, err, c.want)
			}
		})
	}
}

// An unknown role exits 2 and names the registered ones; a role runs with
// its args and exit status, and REACTORLAB_ROLE removed from its
// environment.
func TestRoles(t *testing.T) {
	cmd := exec.Command(selfExe)
	cmd.Env = append(os.Environ(), RoleEnv+"=nope")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitRoleUsage || !strings.Contains(string(out), "test-echo") {
		t.Errorf("unknown role: %v, %q", err, out)
	}
	cmd = exec.Command(selfExe, "a b", "-c")
	cmd.Env = append(os.Environ(), RoleEnv+"=test-args")
	out, err = cmd.Output()
	if !errors.As(err, &ee) || ee.ExitCode() != 7 || string(out) != `["a b","-c"] ""`+"\n" {
		t.Errorf("test-args: %v, %q", err, out)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a role twice did not panic")
		}
	}()
	RegisterRole("test-echo", echoRole)
}
