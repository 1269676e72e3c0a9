package record

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestMergeRecordersIsLossless: two recorders of one start, interval and
// warm-up, with values in different intervals, one class only one of them
// has, one closed earlier than the other: the merge has every value in the
// interval it was recorded in (its interval log, read back, holds per tag
// and interval the merge of the two logs' lines), its totals are the merge
// of the two totals, and clamped counts add up.
func TestMergeRecordersIsLossless(t *testing.T) {
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a := NewRecorder(start, time.Second, 500*time.Millisecond)
	b := NewRecorder(start, time.Second, 500*time.Millisecond)
	ad, _ := a.Class("data")
	bd, _ := b.Class("data")
	bc, _ := b.Class("control")
	ad.Record(100 * time.Microsecond) // warm-up: not in the totals
	bd.Record(7 * time.Microsecond)
	a.Advance(600 * time.Millisecond)
	b.Advance(600 * time.Millisecond)
	for i := range 50 {
		ad.Record(time.Duration(i+1) * time.Millisecond)
		bd.Record(time.Duration(i+1) * 3 * time.Microsecond)
	}
	bc.Record(-time.Second) // clamped to 0
	a.Advance(1700 * time.Millisecond)
	b.Advance(1700 * time.Millisecond)
	ad.Record(2 * time.Second)
	bd.Record(9 * time.Millisecond)
	a.Close(1800 * time.Millisecond) // a ends inside the third interval
	b.Advance(2600 * time.Millisecond)
	bd.Record(11 * time.Millisecond)
	b.Close(2700 * time.Millisecond)

	m, err := MergeRecorders(a, b)
	if err != nil {
		t.Fatal(err)
	}
	wantSpans := []Span{{0, 500 * time.Millisecond, false}, {500 * time.Millisecond, 1500 * time.Millisecond, true},
		{1500 * time.Millisecond, 2500 * time.Millisecond, true}, {2500 * time.Millisecond, 2700 * time.Millisecond, true}}
	if got := m.Spans(); !slicesEqual(got, wantSpans) {
		t.Fatalf("merged spans %v, want %v", got, wantSpans)
	}
	for _, class := range []string{"data", "control"} {
		want := NewHistogram()
		for _, r := range []*Recorder{a, b} {
			if h, ok := r.Histogram(class); ok {
				want.Merge(h)
			}
		}
		got, ok := m.Histogram(class)
		if !ok || !got.Equals(want) {
			t.Errorf("class %s: merged total has %d values (max %d), the recorders' totals %d (max %d)",
				class, got.TotalCount(), got.Max(), want.TotalCount(), want.Max())
		}
	}
	if got := m.Clamped("control"); got != 1 {
		t.Errorf("merged clamped count of control %d, want 1", got)
	}

	// The merged log, line by line, is the merge of the two logs' lines of
	// the same tag and start.
	logs := map[string]*hdrhistogram.Histogram{}
	for _, r := range []*Recorder{a, b} {
		for _, li := range readLog(t, r) {
			key := li.Tag + "@" + li.Start.String()
			if logs[key] == nil {
				logs[key] = NewHistogram()
			}
			logs[key].Merge(li.Hist)
		}
	}
	merged := readLog(t, m)
	seen := 0
	for _, li := range merged {
		key := li.Tag + "@" + li.Start.String()
		want := logs[key]
		if want == nil {
			if li.Hist.TotalCount() > 0 {
				t.Errorf("merged log line %s has %d values no recorder logged", key, li.Hist.TotalCount())
			}
			continue
		}
		seen++
		if !li.Hist.Equals(want) {
			t.Errorf("merged log line %s: %d values, the recorders' lines %d", key, li.Hist.TotalCount(), want.TotalCount())
		}
	}
	if seen != len(logs) {
		t.Errorf("merged log has %d of the recorders' %d tag/interval lines", seen, len(logs))
	}
}

func slicesEqual(a, b []Span) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func readLog(t *testing.T, r *Recorder) []LoggedInterval {
	t.Helper()
	var buf bytes.Buffer
	if err := r.WriteHlog(&buf); err != nil {
		t.Fatal(err)
	}
	lines, err := ReadHlog(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestMergeRecordersRefuses: recorders cutting other intervals, an open
// recorder, and none at all are refused with the reason.
func TestMergeRecordersRefuses(t *testing.T) {
	start := time.Now()
	closed := func(interval, warmup time.Duration, at time.Time) *Recorder {
		r := NewRecorder(at, interval, warmup)
		r.Close(time.Second)
		return r
	}
	open := NewRecorder(start, time.Second, 0)
	for _, c := range []struct {
		name string
		rs   []*Recorder
		want string
	}{
		{"none", nil, "no recorders"},
		{"open", []*Recorder{closed(time.Second, 0, start), open}, "recorder 1 is not closed"},
		{"interval", []*Recorder{closed(time.Second, 0, start), closed(2*time.Second, 0, start)}, "other intervals"},
		{"warm-up", []*Recorder{closed(time.Second, 0, start), closed(time.Second, time.Millisecond, start)}, "other intervals"},
		{"start", []*Recorder{closed(time.Second, 0, start), closed(time.Second, 0, start.Add(time.Millisecond))}, "other intervals"},
	} {
		if _, err := MergeRecorders(c.rs...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
