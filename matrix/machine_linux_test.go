//go:build linux

package matrix

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/reactorlab/reactorlab/results"
)

// Every shard's machine record says what the kernel offers io_uring
// users, or why that could not be probed: one of the two, never neither,
// and it survives the manifest's JSON.
func TestMachineInfoRecordsIOURing(t *testing.T) {
	m := MachineInfo()
	if (m.IOURing == nil) == (m.IOURingError == "") {
		t.Fatalf("io_uring probe %+v, error %q: want exactly one", m.IOURing, m.IOURingError)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back results.Machine
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if m.IOURing == nil {
		t.Logf("io_uring not probed here: %s", m.IOURingError)
		if back.IOURingError != m.IOURingError {
			t.Errorf("the reason did not survive JSON: %s", b)
		}
		return
	}
	if back.IOURing == nil || !back.IOURing.Supports("RECV") || !strings.Contains(string(b), `"io_uring":{`) {
		t.Errorf("the probe did not survive JSON, or lists no RECV: %s", b)
	}
}
