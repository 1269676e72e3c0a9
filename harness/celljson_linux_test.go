//go:build linux

package harness

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/harness/lab"
	"github.com/reactorlab/reactorlab/loadgen"
	"github.com/reactorlab/reactorlab/target"
)

// topKeys are the keys of the JSON object b, in the order written.
func topKeys(t *testing.T, b []byte) []string {
	t.Helper()
	var keys []string
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// A cell's record writes its target under the key of its kind, "reactor"
// with a design's name or "target" with the command as written, in the
// place of the cell's first keys, and reads back the cell it was written
// from; a record written by an earlier build reads as the same cell.
func TestCellSpecJSON(t *testing.T) {
	pl, err := lab.ParsePlacement("server=0-1,loadgen=2-3")
	if err != nil {
		t.Fatal(err)
	}
	load := loadgen.Config{Hot: 1, InFlight: 2, Duration: time.Second}
	for _, tc := range []struct {
		cell    CellSpec
		keys    []string
		written string // a record of this cell as summary.json holds it
	}{
		{CellSpec{Target: target.Design("lt"), ServeArgs: []string{"--workers=2"}, Load: load, Placement: pl, Mode: lab.ModeAuto,
			Grace: 2 * time.Second, StartTimeout: 3 * time.Second, Dir: "/x"},
			[]string{"reactor", "serve_args", "load", "cpus", "mode", "dir", "grace_s", "start_timeout_s"},
			`{"reactor":"lt","serve_args":["--workers=2"],"load":{"data_addr":"","hot":1,"inflight":2,"steady":0,"rate":0,"window":0,"payload":0,"control_every":"0s","control":0,"stop_at":"0s","duration":"1s","warmup":"0s","drain":"0s","interval":"0s","connect_timeout":"0s"},"cpus":{"server":"0-1","client":"2-3"},"mode":"auto","dir":"/x","grace_s":2,"start_timeout_s":3}`},
		{CellSpec{Target: target.Command("./srv --listen {addr}"), Load: load, Mode: lab.ModeLoopback, ServerCPU: 0.5, Dir: "/y"},
			[]string{"target", "load", "cpus", "mode", "server_cpu", "dir"},
			`{"target":"./srv --listen {addr}","load":{"data_addr":"","hot":1,"inflight":2,"steady":0,"rate":0,"window":0,"payload":0,"control_every":"0s","control":0,"stop_at":"0s","duration":"1s","warmup":"0s","drain":"0s","interval":"0s","connect_timeout":"0s"},"cpus":{"server":-1,"client":-1},"mode":"loopback","server_cpu":0.5,"dir":"/y"}`},
	} {
		b, err := json.Marshal(tc.cell)
		if err != nil {
			t.Fatalf("%s: %v", tc.cell.Target, err)
		}
		if got := topKeys(t, b); !slices.Equal(got, tc.keys) {
			t.Errorf("%s: keys %v, want %v", tc.cell.Target, got, tc.keys)
		}
		for what, rec := range map[string][]byte{"written": b, "written before": []byte(tc.written)} {
			var back CellSpec
			if err := json.Unmarshal(rec, &back); err != nil {
				t.Errorf("%s: %s record: %v", tc.cell.Target, what, err)
				continue
			}
			if !reflect.DeepEqual(back, tc.cell) {
				t.Errorf("%s: %s record reads back as %+v, want %+v", tc.cell.Target, what, back, tc.cell)
			}
		}
	}
	var back CellSpec
	if err := json.Unmarshal([]byte(`{"reactor":"lt","target":"./srv"}`), &back); err == nil || !strings.Contains(err.Error(), "both reactor") {
		t.Errorf("a record naming a reactor and a target: %v, want refused", err)
	}
}
