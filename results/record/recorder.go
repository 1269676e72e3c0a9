package record

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The geometry of every histogram a Recorder keeps: values in nanoseconds
// from LowestValue to HighestValue with SignificantFigures significant
// decimal digits. Histograms of one geometry merge without loss.
const (
	LowestValue        int64 = 1
	HighestValue       int64 = int64(60 * time.Second)
	SignificantFigures       = 3
)

// DefaultInterval is the interval length NewRecorder uses when given 0.
const DefaultInterval = time.Second

// ErrClassName is wrapped by the error of Recorder.Class for a name that
// cannot be an interval-log tag.
var ErrClassName = errors.New("results: bad class name")

// NewHistogram returns an empty dense histogram of the Recorder's geometry.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(LowestValue, HighestValue, SignificantFigures)
}

func newPacked() *hdrhistogram.PackedHistogram {
	return hdrhistogram.NewPacked(LowestValue, HighestValue, SignificantFigures)
}

// Span is one interval of a Recorder, as offsets from its start. Start < End
// for every span a Recorder reports.
type Span struct {
	Start, End time.Duration // offsets from the Recorder's start
	// Measured is true when the span lies after the warm-up (Start >=
	// warm-up); its values count in the totals.
	Measured bool
}

// Recorder is a set of named classes of duration histograms, cut into
// intervals. It is created by NewRecorder, fed by Class.Record, moved
// forward in time by Advance and finished by Close.
//
// Invariants:
//   - interval boundaries are warm-up + k·interval (k any integer), the first
//     interval starting at 0 and the last ending at Close: no interval
//     straddles the end of the warm-up;
//   - a value belongs to the interval open when it is recorded (Advance
//     decides which that is: values recorded between two Advance calls go to
//     the interval open after the first);
//   - a class's measured total is exactly the merge of its measured
//     intervals; its clamped count is the sum of theirs;
//   - no value is lost silently: values clamped to the geometry's range are
//     counted (Clamped), values that could not be recorded at all (after
//     Close) are counted (Dropped).
//
// Every method is safe for concurrent use. Record takes only its class's
// mutex and does not allocate.
type Recorder struct {
	start    time.Time
	interval time.Duration
	warmup   time.Duration

	// openEnd is the end offset (ns) of the open interval, read without the
	// lock by Advance's fast path.
	openEnd atomic.Int64

	mu        sync.Mutex
	classes   []*Class // in creation order
	byName    map[string]*Class
	spans     []Span // closed intervals, in order
	openStart time.Duration
	closed    bool
}

// NewRecorder returns a Recorder whose time 0 is start (a wall-clock time:
// it becomes the interval log's StartTime), cutting intervals of interval
// (<= 0 means DefaultInterval) aligned on the end of warmup (< 0 means 0).
func NewRecorder(start time.Time, interval, warmup time.Duration) *Recorder {
	if interval <= 0 {
		interval = DefaultInterval
	}
	warmup = max(warmup, 0)
	r := &Recorder{start: start, interval: interval, warmup: warmup, byName: map[string]*Class{}}
	first := warmup % interval
	if first == 0 {
		first = interval
	}
	r.openEnd.Store(int64(first))
	return r
}

// Start returns the wall-clock time of offset 0.
func (r *Recorder) Start() time.Time { return r.start }

// Interval returns the interval length.
func (r *Recorder) Interval() time.Duration { return r.interval }

// Warmup returns the offset at which measurement starts.
func (r *Recorder) Warmup() time.Duration { return r.warmup }

// Class returns the class called name, creating it on first use. A name must
// be non-empty printable ASCII without commas or spaces (it becomes an
// interval-log tag); otherwise the error wraps ErrClassName. A class created
// after intervals were closed has empty histograms for them.
func (r *Recorder) Class(name string) (*Class, error) {
	if err := checkClassName(name); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.byName[name]; ok {
		return c, nil
	}
	c := &Class{name: name, active: NewHistogram(), closed: r.closed}
	c.intervals = make([]*hdrhistogram.PackedHistogram, len(r.spans))
	c.clamped = make([]int64, len(r.spans))
	r.classes = append(r.classes, c)
	r.byName[name] = c
	return c, nil
}

func checkClassName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrClassName)
	}
	for _, b := range []byte(name) {
		if b <= ' ' || b >= 0x7f || b == ',' {
			return fmt.Errorf("%w %q: only printable ASCII without spaces or commas (it is an interval-log tag)", ErrClassName, name)
		}
	}
	return nil
}

// Advance moves the Recorder to elapsed (since its start): every interval
// that ends at or before elapsed is closed, in every class, and values
// recorded from now on go to the interval containing elapsed. Going back in
// time does nothing. When no interval ends, Advance takes no lock: call it
// as often as convenient. Advance after Close does nothing.
func (r *Recorder) Advance(elapsed time.Duration) {
	if int64(elapsed) < r.openEnd.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	for end := time.Duration(r.openEnd.Load()); elapsed >= end; end = time.Duration(r.openEnd.Load()) {
		r.closeOpenLocked(end)
		r.openEnd.Store(int64(end + r.interval))
	}
}

// Close closes the open interval at elapsed (if it is not empty in time)
// and ends recording: values recorded afterwards are counted as dropped.
// Only the first Close has an effect.
func (r *Recorder) Close(elapsed time.Duration) {
	r.Advance(elapsed)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	if elapsed > r.openStart {
		r.closeOpenLocked(elapsed)
	}
	r.closed = true
	for _, c := range r.classes {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
	}
}

// closeOpenLocked ends the open interval at end and opens the next one there.
func (r *Recorder) closeOpenLocked(end time.Duration) {
	r.spans = append(r.spans, Span{Start: r.openStart, End: end, Measured: r.openStart >= r.warmup})
	for _, c := range r.classes {
		c.rotate()
	}
	r.openStart = end
}

// Spans returns the closed intervals, in order.
func (r *Recorder) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// Classes returns the names of every class, sorted.
func (r *Recorder) Classes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.classes))
	for _, c := range r.classes {
		names = append(names, c.name)
	}
	slices.Sort(names)
	return names
}

// Histogram returns a new dense histogram holding the measured total of
// class name (the merge of its measured intervals, the open one included if
// it is measured), and whether the class exists. The copy is the caller's:
// merge it with others of the same geometry without loss.
func (r *Recorder) Histogram(name string) (*hdrhistogram.Histogram, bool) {
	h, _, ok := r.total(name)
	return h, ok
}

// Clamped returns how many measured values of class name were outside
// [0, HighestValue] and were recorded at the nearest bound.
func (r *Recorder) Clamped(name string) int64 {
	_, t, _ := r.total(name)
	return t.clamped
}

// counts are a class's value counts that are not in its histograms.
type counts struct {
	clamped int64 // recorded, at a bound
	dropped int64 // not recorded at all
}

func (r *Recorder) total(name string) (*hdrhistogram.Histogram, counts, bool) {
	r.mu.Lock()
	c, ok := r.byName[name]
	spans := slices.Clone(r.spans)
	openMeasured := !r.closed && r.openStart >= r.warmup
	r.mu.Unlock()
	h := NewHistogram()
	if !ok {
		return h, counts{}, false
	}
	var t counts
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range spans {
		if !s.Measured {
			continue
		}
		if p := c.intervals[i]; p != nil {
			t.dropped += p.MergeInto(h) // same geometry: always 0, but never hidden
		}
		t.clamped += c.clamped[i]
	}
	if openMeasured {
		t.dropped += h.Merge(c.active)
		t.clamped += c.activeClamped
	}
	t.dropped += c.dropped
	return h, t, true
}

// LastInterval returns a dense copy of class name's most recently closed
// interval and that interval, or ok false if there is no such class or no
// closed interval yet. Progress displays use it once per interval.
func (r *Recorder) LastInterval(name string) (h *hdrhistogram.Histogram, span Span, ok bool) {
	r.mu.Lock()
	c, exists := r.byName[name]
	n := len(r.spans)
	if n > 0 {
		span = r.spans[n-1]
	}
	r.mu.Unlock()
	if !exists || n == 0 {
		return nil, Span{}, false
	}
	h = NewHistogram()
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.intervals[n-1]; p != nil {
		p.MergeInto(h)
	}
	return h, span, true
}

// Class is one named class of a Recorder: the histogram of its open interval
// and the closed ones. Its methods are safe for concurrent use.
type Class struct {
	name string

	mu            sync.Mutex
	active        *hdrhistogram.Histogram // the open interval
	activeClamped int64
	intervals     []*hdrhistogram.PackedHistogram // closed intervals; nil = empty
	clamped       []int64                         // clamped count per closed interval
	dropped       int64                           // values not recorded (after Close, or refused)
	closed        bool
}

// Name returns the class name.
func (c *Class) Name() string { return c.name }

// Record records one duration in the open interval. A negative value is
// recorded as 0 and a value above HighestValue as HighestValue; both are
// counted as clamped. After the Recorder's Close the value is counted as
// dropped. Record does not allocate.
func (c *Class) Record(d time.Duration) {
	c.mu.Lock()
	c.recordLocked(int64(d))
	c.mu.Unlock()
}

// RecordBatch records every duration of ns (nanoseconds) under one
// acquisition of the class's lock; each value is treated as by Record.
func (c *Class) RecordBatch(ns []int64) {
	c.mu.Lock()
	for _, v := range ns {
		c.recordLocked(v)
	}
	c.mu.Unlock()
}

func (c *Class) recordLocked(v int64) {
	if c.closed {
		c.dropped++
		return
	}
	if v < 0 {
		v = 0
		c.activeClamped++
	} else if v > HighestValue {
		v = HighestValue
		c.activeClamped++
	}
	if c.active.RecordValue(v) != nil { // only a total-count overflow can refuse it
		c.dropped++
	}
}

// rotate moves the open interval into the closed ones.
func (c *Class) rotate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	var p *hdrhistogram.PackedHistogram
	if c.active.TotalCount() > 0 {
		p = newPacked()
		c.dropped += p.MergeFrom(c.active) // same geometry: always 0
		c.active.Reset()
	}
	c.intervals = append(c.intervals, p)
	c.clamped = append(c.clamped, c.activeClamped)
	c.activeClamped = 0
}

// interval returns a copy of closed interval i of c (an empty histogram for
// an empty interval, never nil) and its clamped count.
func (c *Class) interval(i int) (*hdrhistogram.PackedHistogram, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.intervals[i]
	if p == nil {
		p = newPacked()
	} else {
		p = p.Clone()
	}
	return p, c.clamped[i]
}

// String returns the class name.
func (c *Class) String() string { return c.name }

// LastIntervalValueAt returns the value at percentile (0..100) of class
// name's most recently closed interval, without copying it, and ok false if
// there is no such class or closed interval. An empty interval gives 0.
func (r *Recorder) LastIntervalValueAt(name string, percentile float64) (v time.Duration, ok bool) {
	r.mu.Lock()
	c, exists := r.byName[name]
	n := len(r.spans)
	r.mu.Unlock()
	if !exists || n == 0 {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.intervals[n-1]; p != nil {
		return time.Duration(p.ValueAtPercentile(percentile)), true
	}
	return 0, true
}
