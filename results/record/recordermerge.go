package record

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// MergeRecorders returns one closed Recorder holding every value of rs, for
// recorders that cut the same intervals: the same start, interval and
// warm-up (a load generator's loops, say, each with its own recorder). Each
// of rs must be closed and none may change afterwards.
//
// The merge is lossless, interval by interval: the merged recorder has a
// span for every interval start any of rs has, ending at the latest end any
// of them gives it (a recorder closed earlier than the others ends its last
// span sooner); each class's histogram of a span is the merge of that
// class's histograms of the span in every recorder that has both, and its
// clamped and dropped counts are their sums. So its interval log and its
// totals are exactly those of the values all of rs recorded, and a class
// that only some of rs have is empty in the spans the others cover.
//
// It refuses (an error, nothing merged) no recorders, one not closed, and
// recorders whose start, interval or warm-up differ.
func MergeRecorders(rs ...*Recorder) (*Recorder, error) {
	if len(rs) == 0 {
		return nil, errors.New("results: merge: no recorders")
	}
	first := rs[0]
	for i, r := range rs {
		r.mu.Lock()
		closed := r.closed
		r.mu.Unlock()
		if !closed {
			return nil, fmt.Errorf("results: merge: recorder %d is not closed", i)
		}
		if !r.start.Equal(first.start) || r.interval != first.interval || r.warmup != first.warmup {
			return nil, fmt.Errorf("results: merge: recorder %d cuts other intervals (start %v, interval %v, warm-up %v) than recorder 0 (%v, %v, %v)",
				i, r.start, r.interval, r.warmup, first.start, first.interval, first.warmup)
		}
	}
	spans := mergedSpans(rs)
	m := NewRecorder(first.start, first.interval, first.warmup)
	m.spans = spans
	if n := len(spans); n > 0 {
		m.openStart = spans[n-1].End
	}
	m.closed = true
	for _, name := range classNames(rs) {
		c := &Class{name: name, active: NewHistogram(), closed: true,
			intervals: make([]*hdrhistogram.PackedHistogram, len(spans)), clamped: make([]int64, len(spans))}
		for _, r := range rs {
			r.mergeClassInto(c, spans)
		}
		m.classes = append(m.classes, c)
		m.byName[name] = c
	}
	return m, nil
}

// mergedSpans is the union of the recorders' spans by start, each ending
// at the latest end given to its start, in order.
func mergedSpans(rs []*Recorder) []Span {
	var out []Span
	for _, r := range rs {
		for _, s := range r.Spans() {
			i, found := slices.BinarySearchFunc(out, s.Start, spanStart)
			if found {
				out[i].End = max(out[i].End, s.End)
				continue
			}
			out = slices.Insert(out, i, s)
		}
	}
	return out
}

// classNames is every class name of rs, in the order first seen.
func classNames(rs []*Recorder) []string {
	var names []string
	for _, r := range rs {
		r.mu.Lock()
		for _, c := range r.classes {
			if !slices.Contains(names, c.name) {
				names = append(names, c.name)
			}
		}
		r.mu.Unlock()
	}
	return names
}

// mergeClassInto adds r's class dst.name, span by span, into dst, whose
// spans are spans (a superset of r's, by start).
func (r *Recorder) mergeClassInto(dst *Class, spans []Span) {
	r.mu.Lock()
	src, ok := r.byName[dst.name]
	own := slices.Clone(r.spans)
	r.mu.Unlock()
	if !ok {
		return
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	dst.dropped += src.dropped
	for i, s := range own {
		j, _ := slices.BinarySearchFunc(spans, s.Start, spanStart)
		dst.clamped[j] += src.clamped[i]
		p := src.intervals[i]
		if p == nil {
			continue
		}
		if dst.intervals[j] == nil {
			dst.intervals[j] = newPacked()
		}
		dst.dropped += dst.intervals[j].Merge(p) // same geometry: always 0, but never hidden
	}
}

// spanStart orders a span by its start (for binary search by start).
func spanStart(s Span, start time.Duration) int { return cmp.Compare(s.Start, start) }
