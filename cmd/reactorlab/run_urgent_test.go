//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/harness"
)

// TestRunUrgentToATargetThatDoesNotAnswer: --urgent-every reaches the load
// generator, the summary and summary.json. A server that does not answer
// urgent data (the reference reactor run as a black box, reading with
// read(2), which steps over the urgent byte) leaves each data
// connection's first byte unanswered and every later tick skipped: the
// run is invalid for that alone, its frames all echoed.
func TestRunUrgentToATargetThatDoesNotAnswer(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "cell")
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--out", dir, "--target", "cmd:" + asMainEnv + "=1 " + exe + " serve --listen {addr}",
		"--hot", "1", "--inflight", "4", "--control-every", "0", "--urgent-every", "20ms", "--duration", "400ms", "--warmup", "0s"}, &stdout, &stderr)
	raw, err := os.ReadFile(filepath.Join(dir, harness.CellSummaryFile))
	if err != nil {
		t.Fatalf("exit %d, no %s: %v\n%s%s", code, harness.CellSummaryFile, err, stdout.String(), stderr.String())
	}
	var res harness.CellResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	out := stdout.String()
	if code != 1 || res.Valid || res.Load == nil || res.Load.Urgent == nil {
		t.Fatalf("exit %d, valid %v, load %+v\n%s%s", code, res.Valid, res.Load, out, stderr.String())
	}
	u, tot := res.Load.Urgent, res.Load.Totals
	if u.Sent != 1 || u.Unanswered != 1 || u.Skipped < 15 || u.NotSent != u.Skipped || tot.Echoed == 0 || tot.Lost != 0 || !tot.Balanced() {
		t.Errorf("urgent %+v, data %+v: want one byte unanswered, the other ticks skipped, the frames intact", *u, tot)
	}
	for _, want := range []string{"an urgent byte every 20ms", "urgent: sent 1 = answered 0 + wrong byte 0 + unanswered 1",
		"ticks skipped", "urgent: 1 of 1 urgent bytes unanswered", "INVALID"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}
