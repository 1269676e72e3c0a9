//go:build linux

package peertruth

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/reactorlab/reactorlab/conformance"
)

// Target builds the peer (binary in binDir) and returns it as a black-box
// target, run in its directory.
func (p Peer) Target(binDir string) (conformance.Target, error) {
	bin := filepath.Join(binDir, p.Name)
	if p.Build != "" {
		cmd := exec.Command("/bin/sh", "-c", strings.ReplaceAll(p.Build, "{bin}", bin))
		cmd.Dir = p.Dir()
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building %s (%s): %v\n%s", p.Name, p.Build, err, out)
		}
	}
	return conformance.Command{Argv: []string{"/bin/sh", "-c", strings.ReplaceAll(p.Run, "{bin}", bin)}, Dir: p.Dir()}, nil
}
