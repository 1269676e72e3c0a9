//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/reactorlab/reactorlab/loadgen"
)

// progressPrinter shows the load generator's progress: one line rewritten
// in place on a terminal, plain lines otherwise. Data frames and control
// PINGs are shown apart, each only when the load has them.
type progressPrinter struct {
	w             io.Writer
	terminal      bool
	total         time.Duration
	data, control bool
	printed       bool
}

func newProgressPrinter(w io.Writer, load loadgen.Config) *progressPrinter {
	// Elapsed counts from the load's start: a hot lead comes first.
	p := &progressPrinter{w: w, total: load.HotLead + load.Warmup + load.Duration,
		data: load.Hot+load.Steady > 0, control: load.ControlEvery > 0}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *progressPrinter) report(r loadgen.Progress) {
	if line := p.line(r); p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.printed = true
}

// line is the progress line of report r: data frames (sent, echoed, the
// rate) and control PINGs apart.
func (p *progressPrinter) line(r loadgen.Progress) string {
	phase := "warm-up"
	if r.Measuring {
		phase = "measuring"
	}
	line := fmt.Sprintf("%5.1fs/%.1fs %-9s", r.Elapsed.Seconds(), p.total.Seconds(), phase)
	if p.data {
		line += fmt.Sprintf("  data: sent %d echoed %d, %.0f frames/s, p99 %v", r.Sent, r.Echoed, r.Rate, r.DataP99.Round(time.Microsecond))
	}
	if p.control {
		line += fmt.Sprintf("  control: %d PINGs echoed, p99 %v", r.ControlEchoed, r.ControlP99.Round(time.Microsecond))
	}
	return line
}

func (p *progressPrinter) done() {
	if p.terminal && p.printed {
		fmt.Fprintln(p.w)
	}
}
