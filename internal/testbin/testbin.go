// Package testbin builds the module's commands for tests that run them as
// processes: each package once per test binary, into one temporary
// directory, which Main removes when the tests are done.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

// module is the import path every package given to Path is relative to.
const module = "github.com/reactorlab/reactorlab"

var (
	mu    sync.Mutex
	dir   string
	built = map[string]string{} // package → binary
	errs  = map[string]error{}  // package → why it could not be built
)

// Path returns the path of the binary built from pkg, a package of the
// module named relative to its root ("cmd/reactorlab"), building it on
// first use; later calls, from any test, get the same binary or the same
// error. A build failure fails t.
func Path(t testing.TB, pkg string) string {
	t.Helper()
	p, err := build(pkg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func build(pkg string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[pkg]; ok {
		return p, nil
	}
	if err, ok := errs[pkg]; ok {
		return "", err
	}
	p, err := compile(pkg)
	if err != nil {
		errs[pkg] = err
		return "", err
	}
	built[pkg] = p
	return p, nil
}

func compile(pkg string) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "reactorlab-testbin-")
		if err != nil {
			return "", err
		}
		dir = d
	}
	// go test puts its own GOROOT/bin first on PATH.
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building %s: %w", pkg, err)
	}
	out := filepath.Join(dir, path.Base(pkg))
	if _, err := os.Stat(out); err == nil {
		out = filepath.Join(dir, fmt.Sprintf("%s-%d", path.Base(pkg), len(built)))
	}
	if b, err := exec.Command(goBin, "build", "-o", out, path.Join(module, pkg)).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// Main runs the tests and removes what Path built; a package's TestMain
// calls os.Exit(testbin.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
	return code
}
