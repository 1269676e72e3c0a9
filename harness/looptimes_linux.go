//go:build linux

package harness

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/diagnose"
	"github.com/reactorlab/reactorlab/results/figure"
)

// measureLoopTimes sets LoopTimes to the server's threads' time over the
// measured period, or LoopTimesNote to why there is none.
func (res *CellResult) measureLoopTimes() {
	if res.Lab == nil || res.Lab.Server == nil || res.Load == nil || res.Load.MeasuredS <= 0 {
		res.LoopTimesNote = "no measured period, or no record of the server"
		return
	}
	from := res.Load.StartTime.Add(res.Cell.Load.WithDefaults().Warmup)
	to := from.Add(time.Duration(res.Load.MeasuredS * float64(time.Second)))
	lt, err := res.Lab.Server.Threads.Window(from, to)
	if err != nil {
		res.LoopTimesNote = err.Error()
		return
	}
	res.LoopTimes = lt
}

// pct is a share as a percentage to the unit, or "?" when unknown.
func pct(f float64) string {
	if f < 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

// writeLoopTimes prints, beside the latency, each server loop thread's
// time over the measured period (waiting, serving, blocked and in what,
// runnable), the other threads summed, what the sampling cost and what
// could not be read; or why there are no figures.
func (r *CellResult) writeLoopTimes(b *strings.Builder) {
	const label = "Loop time"
	lt := r.LoopTimes
	if lt == nil {
		if r.LoopTimesNote != "" {
			fmt.Fprintf(b, "  %-12s none: %s\n", label, r.LoopTimesNote)
		}
		return
	}
	every := time.Duration(lt.Interval)
	if lt.Samples > 0 {
		every = (time.Duration(lt.Window) / time.Duration(lt.Samples)).Round(time.Millisecond)
	}
	fmt.Fprintf(b, "  %-12s server threads over %.2f s of the measured period, shares of it (/proc: %s, one every %v; the sampler used %.1f%% of a CPU):\n",
		label, time.Duration(lt.Window).Seconds(), figure.Counted(lt.Samples, "look", "looks"), every, 100*lt.SamplerCPU)
	if len(lt.Loops) == 0 {
		fmt.Fprintf(b, "  %-12s no thread was seen in an event wait or used a tenth of the period's CPU\n", "")
	}
	for _, l := range lt.Loops {
		fmt.Fprintf(b, "  %-12s %-28s %s\n", "", fmt.Sprintf("loop thread %d (%s)", l.Tid, l.Comm), sharesText(l))
	}
	if lt.OtherCount > 0 {
		fmt.Fprintf(b, "  %-12s %-28s %s\n", "", fmt.Sprintf("%s (of %d%%)", figure.Counted(lt.OtherCount, "other thread", "other threads"), 100*lt.OtherCount), sharesText(lt.Others))
	}
	if n := lt.Started + lt.Ended; n > 0 {
		fmt.Fprintf(b, "  %-12s %d threads began and %d ended within the period: not counted\n", "", lt.Started, lt.Ended)
	}
	for _, u := range lt.Unreadable {
		fmt.Fprintf(b, "  %-12s not read: %s\n", "", u)
	}
}

// sharesText is one line of figures: waiting, serving, blocked (and its
// calls), runnable, and the sleep whose call was not read.
func sharesText(s diagnose.ThreadShares) string {
	blocked := pct(s.Blocked)
	var in []string
	for _, c := range slices.Sorted(maps.Keys(s.BlockedIn)) {
		if v := s.BlockedIn[c]; v >= 0.005 {
			in = append(in, c+" "+pct(v))
		}
	}
	if len(in) > 0 {
		blocked += " (in " + strings.Join(in, ", ") + ")"
	}
	line := fmt.Sprintf("waiting %4s  serving %4s  runnable %4s  blocked %s", pct(s.Waiting), pct(s.Serving), pct(s.Runnable), blocked)
	if s.Unplaced >= 0.005 {
		line += fmt.Sprintf("; asleep where its call was not read %s", pct(s.Unplaced))
	}
	if s.Serving < 0 {
		line += fmt.Sprintf("; schedstat not read: on or waiting for a CPU in %s of the looks", pct(s.Running))
	}
	return line
}
