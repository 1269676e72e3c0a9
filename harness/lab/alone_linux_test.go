//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func init() {
	// test-alone reports where it runs and whether it can listen and
	// connect on its own loopback: what a program that starts its own
	// servers (the conformance suite) needs from the lab.
	RegisterRole("test-alone", func(args []string) int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		c.Close()
		b, _ := json.Marshal(here())
		fmt.Printf("%s\n", b)
		return 0
	})
}

// TestRunAlone runs a client without a server, in the lab and on
// loopback: it runs in a network namespace of the lab's (not the host's),
// its own loopback works, the run is valid without a server, and a spec
// that asks for a server's control address without a server is refused.
func TestRunAlone(t *testing.T) {
	hostNetns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{ModeLab, ModeLoopback} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == ModeLab {
				needLab(t)
			}
			spec := Spec{Client: Proc{Argv: []string{"@test-alone"}}, Placement: Unpinned, Mode: mode, Timeout: 30 * time.Second, Grace: time.Second}
			res, err := Run(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Valid || res.Server != nil || res.Client == nil {
				t.Fatalf("valid %v (%q), server %+v, client %+v", res.Valid, res.Invalid, res.Server, res.Client)
			}
			var w whereami
			if err := json.Unmarshal(res.Client.Stdout, &w); err != nil {
				t.Fatalf("client said %q: %v", res.Client.Stdout, err)
			}
			if inLab := w.Netns != hostNetns; inLab != (mode == ModeLab) {
				t.Errorf("mode %s: the client's network namespace %s, the host's %s", mode, w.Netns, hostNetns)
			}
		})
	}
	_, err = Run(context.Background(), Spec{Client: Proc{Argv: []string{"@test-alone"}}, Control: true, Placement: Unpinned, Timeout: 30 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "no server") {
		t.Errorf("a control address without a server: got %v", err)
	}
}
