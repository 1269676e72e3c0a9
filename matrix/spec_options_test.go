package matrix

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/reactors"
)

// TestUrgentEveryField: urgent_every reaches the load generator's
// configuration and the cell's description, and the manifest's
// configuration only where it is set (so manifests written before it
// existed still compare).
func TestUrgentEveryField(t *testing.T) {
	s, err := Parse([]byte("name: u\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\n" +
		"factors:\n  - {name: urgent_every, values: [10ms, 100ms]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{BaselineID: 0, "urgent_every=10ms": 10 * time.Millisecond, "urgent_every=100ms": 100 * time.Millisecond}
	cells := checkCells(t, s)
	if len(cells) != len(want) {
		t.Fatalf("%d cells, want %d", len(cells), len(want))
	}
	for _, c := range cells {
		every, ok := want[c.ID]
		if !ok {
			t.Fatalf("unexpected cell %s", c.ID)
		}
		_, lc, _ := c.Configs()
		info := c.Info()
		v, inManifest := info.Config["urgent_every"]
		desc := strings.Contains(info.Describe, "urgent byte every")
		if lc.UrgentEvery != every || inManifest != (every != 0) || desc != (every != 0) || inManifest && v != strings.TrimPrefix(c.ID, "urgent_every=") {
			t.Errorf("%s: load urgent every %v, manifest %v, description %q", c.ID, lc.UrgentEvery, info.Config, info.Describe)
		}
	}
}

// TestReactorPassThroughFields: control_sched, admission and urgent reach
// the reactor's configuration as the serve flags of the same names set
// it, in the baseline and as factors; they are in the manifest and the
// description only where set; writing the flag's default equals leaving
// it out. A field whose flag this build's reactors lack is skipped,
// saying so.
func TestReactorPassThroughFields(t *testing.T) {
	for _, tc := range []struct{ field, value string }{
		{"control_sched", "fifo:10"},
		{"admission", "token-bucket:1000/100"}, // the forms issue 16 names
		{"urgent", "oob"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			name := serveFlag(tc.field)
			f := reactorFlags(reactors.DefaultConfig()).Lookup(name)
			if f == nil {
				t.Skipf("this build's reactors have no --%s flag yet", name)
			}
			checkPassThrough(t, tc.field, tc.value, f.DefValue, func(rc reactors.Config) string { return reactorFlags(rc).Lookup(name).Value.String() })
		})
	}
}

// reactorFlags is rc's flag set: each flag's value is rc's field.
func reactorFlags(rc reactors.Config) *flag.FlagSet {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	rc.Flags(fs)
	return fs
}

// checkPassThrough parses a spec whose baseline leaves field out and
// whose factor sets it to value, and checks each cell's reactor
// configuration (get reads the field), manifest and description.
func checkPassThrough(t *testing.T, field, value, def string, get func(reactors.Config) string) {
	t.Helper()
	s, err := Parse([]byte("name: p\nbaseline: {reactor: prio-thread, hot: 1, inflight: 1, control_every: 10ms, duration: 1s}\n" +
		"factors:\n  - {name: " + field + ", values: ['" + value + "']}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells := checkCells(t, s)
	if len(cells) != 2 || cells[1].ID != field+"="+value {
		t.Fatalf("cells %v", cells)
	}
	for i, want := range []string{def, value} {
		rc, _, err := cells[i].Configs()
		info := cells[i].Info()
		_, inManifest := info.Config[field]
		if got := get(rc); err != nil || got != want || inManifest != (i == 1) || strings.Contains(info.Describe, field+" ") != (i == 1) {
			t.Errorf("%s: %s = %q (%v), want %q; manifest %v, description %q", cells[i].ID, field, got, err, want, info.Config, info.Describe)
		}
	}
	if _, err := Parse([]byte("name: p\nbaseline: {reactor: lt, hot: 1, inflight: 1, duration: 1s}\n" +
		"factors:\n  - {name: " + field + ", values: ['" + def + "']}\n")); err == nil || !strings.Contains(err.Error(), "equals the baseline's") {
		t.Errorf("a factor value equal to the default: %v, want it refused as the baseline's", err)
	}
}
