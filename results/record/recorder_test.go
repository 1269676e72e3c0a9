package record_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/results/stats"
)

var start = time.Date(2030, 1, 2, 3, 4, 5, 678_000_000, time.UTC)

func mustClass(t testing.TB, r *record.Recorder, name string) *record.Class {
	t.Helper()
	c, err := r.Class(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestIntervalsAlignOnWarmup: boundaries are warm-up + k·interval, the first
// interval starts at 0, the last ends at Close, and each span is wholly
// warm-up or wholly measured.
func TestIntervalsAlignOnWarmup(t *testing.T) {
	ms := time.Millisecond
	r := record.NewRecorder(start, 100*ms, 250*ms)
	mustClass(t, r, "data")
	for e := time.Duration(0); e <= 730*ms; e += 7 * ms {
		r.Advance(e)
	}
	r.Close(730 * ms)
	got := r.Spans()
	want := []record.Span{{0, 50 * ms, false}, {50 * ms, 150 * ms, false}, {150 * ms, 250 * ms, false},
		{250 * ms, 350 * ms, true}, {350 * ms, 450 * ms, true}, {450 * ms, 550 * ms, true},
		{550 * ms, 650 * ms, true}, {650 * ms, 730 * ms, true}}
	if !slices.Equal(got, want) {
		t.Fatalf("spans\n got %v\nwant %v", got, want)
	}
	// No warm-up: boundaries at multiples of the interval; Close on a
	// boundary adds no empty span.
	r = record.NewRecorder(start, 100*ms, 0)
	r.Advance(250 * ms)
	r.Close(300 * ms)
	if got, want := r.Spans(), []record.Span{{0, 100 * ms, true}, {100 * ms, 200 * ms, true}, {200 * ms, 300 * ms, true}}; !slices.Equal(got, want) {
		t.Fatalf("spans without warm-up\n got %v\nwant %v", got, want)
	}
}

// recordPlan records, at known times, known values in three classes and
// returns how many values each (class, span index) got.
func recordPlan(t *testing.T, r *record.Recorder, end time.Duration) map[string]map[int]int64 {
	rng := rand.New(rand.NewPCG(1, 2))
	classes := []string{"data", "control", "service/hot-0"}
	want := map[string]map[int]int64{}
	for _, name := range classes {
		want[name] = map[int]int64{}
	}
	step := 3 * time.Millisecond
	for e := time.Duration(0); e < end; e += step {
		r.Advance(e)
		span := len(r.Spans())
		for i, name := range classes {
			if i == 2 && e > end/2 {
				continue // a class that goes quiet: its later intervals are empty
			}
			n := 1 + rng.IntN(5)
			for range n {
				mustClass(t, r, name).Record(time.Duration(1 + rng.Int64N(int64(50*time.Millisecond))))
			}
			want[name][span] += int64(n)
		}
	}
	r.Advance(end - time.Millisecond)
	return want
}

// TestHlogRoundTrip writes an interval log, reads it back with
// hdrhistogram-go's reader, and checks the header, the tags, every
// interval's count, that warm-up intervals are there, and that the measured
// intervals merged equal the Recorder's totals exactly.
func TestHlogRoundTrip(t *testing.T) {
	ms := time.Millisecond
	warmup := 250 * ms
	r := record.NewRecorder(start, 100*ms, warmup)
	want := recordPlan(t, r, 930*ms)
	mustClass(t, r, "data").Record(2 * time.Minute) // clamped, in the last (measured) interval
	r.Close(930 * ms)

	var buf bytes.Buffer
	if err := r.WriteHlog(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, line := range []string{
		"#[Histogram log format version 1.3]\n",
		"#[StartTime: 1893553445 (seconds since epoch), 2030-01-02T03:04:05Z]\n",
		"#[BaseTime: 1893553445 (seconds since epoch)]\n",
		`"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"` + "\n",
		"\nTag=data,0.678000,0.050000,",
		"\nTag=service/hot-0,",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("log lacks %q:\n%s", line, text[:min(len(text), 800)])
		}
	}
	if !strings.Contains(text, "clamped to [0, 60 s]: data=1]") {
		t.Errorf("log lacks the clamped comment")
	}

	got, err := record.ReadHlog(&buf)
	if err != nil {
		t.Fatal(err)
	}
	spans := r.Spans()
	if len(got) != 3*len(spans) {
		t.Fatalf("read %d intervals, want %d (3 classes x %d spans)", len(got), 3*len(spans), len(spans))
	}
	merged := map[string]*hdrhistogram.Histogram{}
	warmupSeen := map[string]int{}
	for i, li := range got {
		span := i / 3
		wantCount := want[li.Tag][span]
		if li.Tag == "data" && span == len(spans)-1 {
			wantCount++ // the clamped value
		}
		if li.Hist.TotalCount() != wantCount {
			t.Errorf("interval %d tag %s: count %d, want %d", span, li.Tag, li.Hist.TotalCount(), wantCount)
		}
		if d := li.Start.Sub(start.Add(spans[span].Start)); d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("interval %d tag %s starts at %v, want %v", span, li.Tag, li.Start, start.Add(spans[span].Start))
		}
		if li.Start.Before(start.Add(warmup)) {
			warmupSeen[li.Tag]++
			continue
		}
		if merged[li.Tag] == nil {
			merged[li.Tag] = record.NewHistogram()
		}
		if dropped := merged[li.Tag].Merge(li.Hist); dropped != 0 {
			t.Fatalf("merge dropped %d", dropped)
		}
	}
	for _, name := range []string{"data", "control", "service/hot-0"} {
		if warmupSeen[name] != 3 {
			t.Errorf("%s: %d warm-up intervals in the log, want 3", name, warmupSeen[name])
		}
		total, ok := r.Histogram(name)
		if !ok {
			t.Fatalf("no class %s", name)
		}
		if !total.Equals(merged[name]) {
			t.Errorf("%s: merged measured intervals (count %d) != total (count %d)", name, merged[name].TotalCount(), total.TotalCount())
		}
		var measured int64
		for span, n := range want[name] {
			if spans[span].Measured {
				measured += n
			}
		}
		if name == "data" {
			measured++
		}
		if total.TotalCount() != measured {
			t.Errorf("%s: total %d, want %d measured values (warm-up excluded)", name, total.TotalCount(), measured)
		}
	}
	if c := r.Clamped("data"); c != 1 {
		t.Errorf("clamped = %d, want 1", c)
	}
}

// TestClampAndDrop: out-of-range values are recorded at the bound and
// counted; values after Close are counted as dropped, never recorded.
func TestClampAndDrop(t *testing.T) {
	r := record.NewRecorder(start, time.Second, 0)
	c := mustClass(t, r, "x")
	c.Record(-5)
	c.Record(61 * time.Second)
	c.Record(time.Millisecond)
	r.Close(time.Second / 2)
	c.Record(time.Millisecond)
	c.RecordBatch([]int64{1, 2})
	h, _ := r.Histogram("x")
	s := r.Summary().Classes["x"]
	if h.TotalCount() != 3 || s.Count != 3 || s.Clamped != 2 || s.Dropped != 3 {
		t.Fatalf("count %d, summary %+v; want count 3, clamped 2, dropped 3", h.TotalCount(), s)
	}
	if h.Max() < record.HighestValue || h.Min() != 0 {
		t.Fatalf("min %d max %d: clamped values not at the bounds", h.Min(), h.Max())
	}
}

func TestClassNames(t *testing.T) {
	r := record.NewRecorder(start, 0, 0)
	for _, bad := range []string{"", "a b", "a,b", "a\nb", "é"} {
		if _, err := r.Class(bad); !errors.Is(err, record.ErrClassName) {
			t.Errorf("Class(%q) = %v, want ErrClassName", bad, err)
		}
	}
	a, _ := r.Class("service/steady-3")
	b, _ := r.Class("service/steady-3")
	if a != b {
		t.Fatal("Class returned two classes for one name")
	}
}

// TestLateClass: a class created after intervals closed has empty ones, and
// the log still has a line for it in every interval.
func TestLateClass(t *testing.T) {
	r := record.NewRecorder(start, 100*time.Millisecond, 0)
	mustClass(t, r, "early").Record(time.Millisecond)
	r.Advance(250 * time.Millisecond)
	mustClass(t, r, "late").Record(time.Millisecond)
	r.Close(300 * time.Millisecond)
	var buf bytes.Buffer
	if err := r.WriteHlog(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := record.ReadHlog(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	var counts []int64
	for _, li := range got {
		tags = append(tags, li.Tag)
		counts = append(counts, li.Hist.TotalCount())
	}
	if want := []string{"early", "late", "early", "late", "early", "late"}; !slices.Equal(tags, want) {
		t.Fatalf("tags %v, want %v", tags, want)
	}
	if want := []int64{1, 0, 0, 0, 0, 1}; !slices.Equal(counts, want) {
		t.Fatalf("counts %v, want %v", counts, want)
	}
}

// TestConcurrentRecording records from several goroutines while another
// advances time; nothing is lost (run with -race).
func TestConcurrentRecording(t *testing.T) {
	r := record.NewRecorder(start, time.Millisecond, 0)
	c := mustClass(t, r, "data")
	const writers, each = 4, 5000
	var wg sync.WaitGroup // writers and an advancer
	for range writers {
		wg.Go(func() {
			for i := range each {
				c.Record(time.Duration(i + 1))
			}
		})
	}
	wg.Go(func() { // meanwhile, close 200 intervals
		for e := range 200 {
			r.Advance(time.Duration(e) * time.Millisecond)
		}
	})
	wg.Wait()
	r.Close(200 * time.Millisecond)
	h, _ := r.Histogram("data")
	if h.TotalCount() != writers*each {
		t.Fatalf("total %d, want %d", h.TotalCount(), writers*each)
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	r := record.NewRecorder(start, time.Second, 0)
	c := mustClass(t, r, "data")
	batch := []int64{1, 2, 3}
	if n := testing.AllocsPerRun(1000, func() {
		c.Record(123 * time.Microsecond)
		c.RecordBatch(batch)
		r.Advance(time.Millisecond)
	}); n != 0 {
		t.Fatalf("%v allocations per Record", n)
	}
}

// TestSummaryJSON: field names are the stable snake_case ones, values in
// microseconds.
func TestSummaryJSON(t *testing.T) {
	r := record.NewRecorder(start, time.Second, 0)
	c := mustClass(t, r, "control")
	for i := 1; i <= 1000; i++ {
		c.Record(time.Duration(i) * time.Microsecond)
	}
	r.Close(time.Second)
	b, err := json.Marshal(r.Summary())
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Classes map[string]map[string]any `json:"classes"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for k, v := range m.Classes["control"] {
		if f, ok := v.(float64); ok {
			got[k] = f
		}
	}
	// Each percentile's interval: 1,000 values bound p50 … p99, not p99.9.
	var ivs struct {
		Classes map[string]struct {
			Intervals map[string]stats.Interval `json:"intervals"`
		} `json:"classes"`
	}
	if err := json.Unmarshal(b, &ivs); err != nil {
		t.Fatal(err)
	}
	iv := ivs.Classes["control"].Intervals
	if p50 := iv["p50"]; p50.TooFew || p50.LoUs > 500 || p50.HiUs < 500 || p50.HiUs-p50.LoUs > 100 {
		t.Errorf("p50's interval %+v, want one around 500 µs", p50)
	}
	if p999 := iv["p99.9"]; !p999.TooFew || p999.Need <= 1000 {
		t.Errorf("p99.9's interval of 1,000 values %+v, want too few", p999)
	}
	for key, want := range map[string]float64{"count": 1000, "min_us": 1, "max_us": 1000, "p50_us": 500, "p90_us": 900, "p99_us": 990, "p99_9_us": 999, "p99_99_us": 1000, "mean_us": 500.5, "clamped": 0} {
		v, ok := got[key]
		if !ok {
			t.Errorf("summary lacks %q: %s", key, b)
			continue
		}
		if v < want*0.999-0.001 || v > want*1.001+0.001 { // 3 significant digits
			t.Errorf("%s = %v, want %v", key, v, want)
		}
	}
}

// TestWriteSpectrum checks the wrk2 layout, the last row (percentile 1,
// "inf"), and the footer's geometry against hdrhistogram-go's own.
func TestWriteSpectrum(t *testing.T) {
	h := record.NewHistogram()
	for i := int64(1); i <= 10000; i++ {
		h.RecordValue(i * 1000) // 1 us .. 10 ms
	}
	var buf bytes.Buffer
	if err := record.WriteSpectrum(&buf, "Data latency (corrected)", h); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, s := range []string{
		"  Data latency (corrected)\n",
		" 50.000%    5.00ms\n",
		"100.000%   10.00ms\n",
		"  Detailed Percentile spectrum:\n       Value   Percentile   TotalCount 1/(1-Percentile)\n\n",
		"       0.001     0.000000            1         1.00\n",
		"      10.002     1.000000        10000          inf\n",
		"#[Max     =       10.002, Total count    =        10000]\n",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("spectrum lacks %q:\n%s", s, out)
		}
	}
	var ref bytes.Buffer
	if _, err := h.PercentilesPrint(&ref, 5, 1e6); err != nil {
		t.Fatal(err)
	}
	refLines := strings.Split(strings.TrimSpace(ref.String()), "\n")
	outLines := strings.Split(strings.TrimSpace(out), "\n")
	if a, b := refLines[len(refLines)-1], outLines[len(outLines)-1]; a != b {
		t.Errorf("footer %q, hdrhistogram-go says %q", b, a)
	}
	// Same number of spectrum rows as the library's percentile printer.
	if a, b := len(refLines)-2-3, strings.Count(out, "\n")-len(spectrumHead(out)); a <= 0 || b < a {
		t.Errorf("spectrum rows: %d, library %d", b, a)
	}
	buf.Reset()
	if err := record.WriteSpectrum(&buf, "empty", record.NewHistogram()); err != nil || !strings.Contains(buf.String(), "(no values)") {
		t.Errorf("empty histogram: %v %q", err, buf.String())
	}
}

func spectrumHead(out string) []string {
	i := strings.Index(out, "Detailed")
	return strings.Split(out[:i], "\n")
}

func BenchmarkRecord(b *testing.B) {
	r := record.NewRecorder(start, time.Second, 0)
	c := mustClass(b, r, "data")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c.Record(time.Duration(i&0xfffff) * 10)
	}
}
