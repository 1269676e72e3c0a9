package record_test

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/results/record"
)

// recordRun records a run as the load generator does: a 1 s warm-up, then
// two measured 1 s intervals. During the warm-up it records warm values of
// warmValue in each class; afterwards measured values per class and
// interval (ordinary latencies between 100 µs and 2 ms). It returns the
// closed Recorder.
func recordRun(t *testing.T, start time.Time, warm int, warmValue time.Duration, measured map[string]int) *record.Recorder {
	t.Helper()
	const warmup = time.Second
	rec := record.NewRecorder(start, time.Second, warmup)
	classes := map[string]*record.Class{}
	for _, name := range sortedKeys(measured) {
		c, err := rec.Class(name)
		if err != nil {
			t.Fatal(err)
		}
		classes[name] = c
	}
	rec.Advance(100 * time.Millisecond)
	for _, name := range sortedKeys(measured) {
		for i := 0; i < warm; i++ {
			classes[name].Record(warmValue)
		}
	}
	for k, at := range []time.Duration{warmup, warmup + time.Second} {
		rec.Advance(at)
		for _, name := range sortedKeys(measured) {
			for i := 0; i < measured[name]; i++ {
				classes[name].Record(100*time.Microsecond + time.Duration((i*37+k*11)%1900)*time.Microsecond)
			}
		}
	}
	rec.Close(warmup + 2*time.Second)
	return rec
}

// writeHlog writes rec's interval log to path, creating its directory.
func writeHlog(t *testing.T, path string, rec *record.Recorder) {
	t.Helper()
	var buf bytes.Buffer
	if err := rec.WriteHlog(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMeasuredHistogramsEqualsRecorder: the measured histograms read back
// from an interval log equal the Recorder's measured totals exactly, class
// by class; the warm-up's values (a 50 ms marker recorded only then) are
// not among them. The start is not on a millisecond, so the log's
// millisecond timestamps of the first measured interval fall just before
// the measured period's start (MeasuredHistograms allows for that).
func TestMeasuredHistogramsEqualsRecorder(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 123_456_789, time.UTC)
	const marker = 50 * time.Millisecond
	rec := recordRun(t, start, 25, marker, map[string]int{"data": 500, "control": 40})
	path := filepath.Join(t.TempDir(), "loadgen.hlog")
	writeHlog(t, path, rec)

	got, err := record.MeasuredHistograms(path, start.Add(rec.Warmup()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Errorf("classes %v, want data and control", sortedKeys(got))
	}
	for _, class := range []string{"data", "control"} {
		want, ok := rec.Histogram(class)
		if !ok {
			t.Fatalf("no class %s", class)
		}
		h := got[class]
		if h == nil {
			t.Fatalf("no measured histogram of %s", class)
		}
		if !h.Equals(want) {
			t.Errorf("%s: measured histogram (count %d, max %d ns) differs from the recorder's total (count %d, max %d ns)",
				class, h.TotalCount(), h.Max(), want.TotalCount(), want.Max())
		}
		if h.Max() >= int64(marker) {
			t.Errorf("%s: max %v: the warm-up's %v marker is in the measured histogram", class, time.Duration(h.Max()), marker)
		}
	}
	if c := got["data"].TotalCount(); c != 2*500 {
		t.Errorf("data count %d, want %d", c, 2*500)
	}
}

// sortedKeys are m's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
