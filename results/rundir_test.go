package results_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/record"
)

// recordRun records a run as the load generator does: a 1 s warm-up, then
// two measured 1 s intervals. During the warm-up it records warm values of
// warmValue in each class; afterwards measured values per class and
// interval (ordinary latencies between 100 µs and 2 ms). It returns the
// closed record.Recorder.
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

// TestCellHistogramsValidRunsOnly: each cell's merged histogram holds
// exactly the measured values of its valid runs, every repeat included;
// invalidating one more run lowers the cell's count by exactly that run's
// measured count.
func TestCellHistogramsValidRunsOnly(t *testing.T) {
	dir := t.TempDir()
	m := synthManifest("cellhists", 3, []synthCell{{"hot", "16"}, {"reactor", "et"}}, noisy(31, typicalMeans, 0.02, nil))
	start := time.Date(2030, 1, 2, 3, 4, 5, 500_000_000, time.UTC)
	measured := map[string]int64{} // run directory → its measured data count
	for i := range m.Runs {
		r := &m.Runs[i]
		n := 100 + 7*(i+1) // distinct per run, so a missing or extra run shows
		rec := recordRun(t, start, 13, 50*time.Millisecond, map[string]int{"data": n})
		writeHlog(t, filepath.Join(dir, r.Dir, results.RunHlogFile), rec)
		r.MeasuredFrom = start.Add(rec.Warmup())
		measured[r.Dir] = int64(2 * n)
		start = start.Add(time.Minute)
	}
	invalidate := func(cell string, repeat int, pair string) string {
		for i := range m.Runs {
			r := &m.Runs[i]
			if r.Cell == cell && r.Repeat == repeat && r.Pair == pair {
				r.Valid, r.Invalid = false, []string{"test"}
				return r.Dir
			}
		}
		t.Fatalf("no run %s/%d/%s", cell, repeat, pair)
		return ""
	}
	invalidate("hot=16", 1, "hot=16")
	wantCounts := func() map[string]int64 {
		out := map[string]int64{}
		for _, r := range m.Runs {
			if r.Valid {
				out[r.Cell] += measured[r.Dir]
			}
		}
		return out
	}
	check := func(when string) map[string]int64 {
		t.Helper()
		hs, err := results.CellHistograms(dir, m)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for cell, classes := range hs {
			h := classes["data"]
			if h == nil {
				t.Fatalf("%s: cell %s has no data histogram", when, cell)
			}
			got[cell] = h.TotalCount()
			if h.Max() >= int64(50*time.Millisecond) {
				t.Errorf("%s: cell %s: warm-up values merged (max %v)", when, cell, time.Duration(h.Max()))
			}
		}
		want := wantCounts()
		for _, c := range m.Cells {
			if got[c.ID] != want[c.ID] {
				t.Errorf("%s: cell %s data count %d, want %d (the valid runs' measured counts)", when, c.ID, got[c.ID], want[c.ID])
			}
		}
		return got
	}
	before := check("one invalid run")
	for _, c := range []struct {
		cell, pair string
		repeat     int
	}{{"baseline", "reactor=et", 2}, {"reactor=et", "reactor=et", 2}} {
		d := invalidate(c.cell, c.repeat, c.pair)
		after := check("after invalidating " + d)
		if before[c.cell]-after[c.cell] != measured[d] {
			t.Errorf("invalidating %s (%s repeat %d) lowered the count by %d, want %d", d, c.cell, c.repeat, before[c.cell]-after[c.cell], measured[d])
		}
		before = after
	}
}
