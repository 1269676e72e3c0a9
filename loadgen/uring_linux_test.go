//go:build linux

package loadgen_test

import (
	"testing"

	"github.com/reactorlab/reactorlab/loadgen"
)

// engines are the engines the engine-independent tests run on, each as a
// subtest: the accounting, the coordinated-omission correction and the
// self-check are one code over either engine's system calls.
var engines = []string{loadgen.EngineEpoll, loadgen.EngineUring}

// needEngine skips t, with the reason, where engine cannot run.
func needEngine(t testing.TB, engine string) {
	t.Helper()
	if err := loadgen.EngineAvailable(engine); err != nil {
		t.Skipf("the %s engine cannot run here: %v", engine, err)
	}
}
