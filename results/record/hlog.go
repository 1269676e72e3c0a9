package record

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// WriteHlog writes every closed interval of every class as an HdrHistogram
// interval log (format 1.3), through hdrhistogram-go's log writer:
//
//	#[Histogram log format version 1.3]
//	#[StartTime: <s> (seconds since epoch), <ISO 8601>]
//	#[BaseTime: <s> (seconds since epoch)]
//	#[reactorlab: ...]                      (comments: units, warm-up, clamped counts)
//	"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//	Tag=<class>,<start s>,<length s>,<max ms>,<base64 V2 histogram>
//
// with one tagged line per class (sorted by name) per interval (in time
// order), empty histograms included, so every class covers the same time.
// Timestamps are relative to BaseTime, the Recorder's start truncated to the
// second (the writer prints whole seconds); values are nanoseconds, so
// Interval_Max is in milliseconds, the format's convention. Warm-up intervals
// are written too: a reader tells them apart by their start time (a comment
// gives the warm-up end). The open interval is not written: Close first.
func (r *Recorder) WriteHlog(w io.Writer) error {
	r.mu.Lock()
	spans := append([]Span(nil), r.spans...)
	classes := append([]*Class(nil), r.classes...)
	r.mu.Unlock()
	sortClasses(classes)

	base := r.start.Truncate(time.Second).UnixMilli()
	lw := hdrhistogram.NewHistogramLogWriter(w)
	lw.SetBaseTime(base)
	if err := lw.OutputLogFormatVersion(); err != nil {
		return fmt.Errorf("hlog: %w", err)
	}
	if err := lw.OutputStartTime(base); err != nil {
		return fmt.Errorf("hlog: %w", err)
	}
	if err := lw.OutputBaseTime(base); err != nil {
		return fmt.Errorf("hlog: %w", err)
	}
	warmEnd := r.start.Add(r.warmup).Sub(time.UnixMilli(base)).Seconds()
	if err := lw.OutputComment(fmt.Sprintf("[reactorlab: values in ns; start %s; interval %v; warm-up ends at %.3f s after BaseTime: earlier intervals are warm-up, not in the totals]",
		r.start.UTC().Format(time.RFC3339Nano), r.interval, warmEnd)); err != nil {
		return fmt.Errorf("hlog: %w", err)
	}
	if err := lw.OutputLegend(); err != nil {
		return fmt.Errorf("hlog: %w", err)
	}
	clamped := make([]int64, len(classes))
	for i, s := range spans {
		startMs := r.start.Add(s.Start).UnixMilli()
		endMs := r.start.Add(s.End).UnixMilli()
		for j, c := range classes {
			p, cl := c.interval(i)
			if s.Measured {
				clamped[j] += cl
			}
			p.SetTag(c.name)
			p.SetStartTimeMs(startMs)
			p.SetEndTimeMs(endMs)
			if err := lw.OutputIntervalPackedHistogram(p); err != nil {
				return fmt.Errorf("hlog: class %s, interval %d: %w", c.name, i, err)
			}
		}
	}
	var b strings.Builder
	for j, c := range classes {
		if clamped[j] > 0 {
			fmt.Fprintf(&b, " %s=%d", c.name, clamped[j])
		}
	}
	if b.Len() > 0 {
		if err := lw.OutputComment("[reactorlab: measured values clamped to [0, 60 s]:" + b.String() + "]"); err != nil {
			return fmt.Errorf("hlog: %w", err)
		}
	}
	return nil
}

func sortClasses(cs []*Class) {
	slices.SortFunc(cs, func(a, b *Class) int { return strings.Compare(a.name, b.name) })
}

// LoggedInterval is one line of an interval log as ReadHlog returns it.
type LoggedInterval struct {
	Tag        string                  // the class ("" for an untagged line)
	Start, End time.Time               // absolute, millisecond resolution
	Hist       *hdrhistogram.Histogram // the interval's values, decoded
}

// ReadHlog reads an HdrHistogram interval log (as WriteHlog writes it, or any
// other writer's) with hdrhistogram-go's log reader and returns its
// intervals in file order.
func ReadHlog(r io.Reader) ([]LoggedInterval, error) {
	lr := hdrhistogram.NewHistogramLogReader(r)
	var out []LoggedInterval
	for {
		h, err := lr.NextIntervalHistogram()
		if err != nil {
			return out, fmt.Errorf("hlog: after %d intervals: %w", len(out), err)
		}
		if h == nil {
			return out, nil
		}
		out = append(out, LoggedInterval{Tag: h.Tag(), Start: time.UnixMilli(h.StartTimeMs()), End: time.UnixMilli(h.EndTimeMs()), Hist: h})
	}
}

// MeasuredHistograms reads the interval log at path and adds up, per class
// (tag), the intervals that start at or after from: the measured period.
// The merge is lossless: the result equals the recorder's measured totals.
func MeasuredHistograms(path string, from time.Time) (map[string]*hdrhistogram.Histogram, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ivs, err := ReadHlog(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The log keeps milliseconds: allow one for rounding.
	from = from.Add(-time.Millisecond)
	out := map[string]*hdrhistogram.Histogram{}
	for _, iv := range ivs {
		if iv.Start.Before(from) {
			continue
		}
		if err := MergeClass(out, iv.Tag, iv.Hist); err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}

// MergeClass merges h into into[class], making that histogram with
// NewHistogram when it is absent; values beyond its range are an error
// naming the class, the others still merged.
func MergeClass(into map[string]*hdrhistogram.Histogram, class string, h *hdrhistogram.Histogram) error {
	to := into[class]
	if to == nil {
		to = NewHistogram()
		into[class] = to
	}
	if dropped := to.Merge(h); dropped > 0 {
		return fmt.Errorf("%d values of %s beyond the histogram's range", dropped, class)
	}
	return nil
}
