package cases

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/diagnose"
)

// diagnosisWindow is how long a failing case's server is observed by
// package diagnose: long enough for diagnose's rules to speak (30 samples
// of every thread; a tenth of it is 30 ms of CPU, a few rounds of any
// loop; a read spin makes its thousand calls in a few milliseconds; ten
// looks at the epoll sets), and short beside the cases' own windows (W2's
// and R4's are 500 ms), so a failing case takes 0.3 s more and a passing
// one nothing.
const diagnosisWindow = 300 * time.Millisecond

// mostDiagnosed bounds the serving processes observed at once (a server
// of SO_REUSEPORT workers has one each): they are observed side by side,
// so the window is the same for all.
const mostDiagnosed = 4

// diagnosis is what package diagnose said of the processes that serve an
// instance, observed while the condition of a case's failure still held:
// the lines a failure's evidence carries, and why any process could not
// be read (for the case's log: what could not be read is absent from the
// evidence, never a guess).
type diagnosis struct {
	evidence []string
	unread   []string
}

// diagnoseServing observes every process that holds inst's listener
// (conformance.ServingProcesses, at most mostDiagnosed) for
// diagnosisWindow, side by side, and returns what diagnose concluded of
// each loop thread, each line starting "diagnose". when says when the
// window was taken, relative to the case's own ("after the idle window,
// the clients still idle"). A target without a process of its own, a
// process that ended, one none of whose threads' system calls could be
// read, or ctx ending first give no evidence, only the reason.
func diagnoseServing(ctx context.Context, inst conformance.Instance, when string) diagnosis {
	var d diagnosis
	serving, _, err := conformance.ServingProcesses(inst)
	if err != nil {
		d.unread = append(d.unread, fmt.Sprintf("diagnose: not run: %v", err))
		return d
	}
	if len(serving) > mostDiagnosed {
		d.unread = append(d.unread, fmt.Sprintf("diagnose: %d processes serve the listener; the first %d were observed", len(serving), mostDiagnosed))
		serving = serving[:mostDiagnosed]
	}
	reports := make([]diagnose.Report, len(serving))
	errs := make([]error, len(serving))
	var wg sync.WaitGroup
	for i, pid := range serving {
		wg.Go(func() { reports[i], errs[i] = diagnose.Observe(ctx, pid, diagnose.Options{Window: diagnosisWindow}) })
	}
	wg.Wait()
	for i, pid := range serving {
		r := reports[i]
		switch {
		case errs[i] != nil:
			d.unread = append(d.unread, fmt.Sprintf("diagnose: pid %d: %v", pid, errs[i]))
			continue
		case r.Sampled == 0:
			d.unread = append(d.unread, fmt.Sprintf("diagnose: pid %d: no thread's system call could be read, nothing judged (%s)", pid, strings.Join(r.Unreadable, "; ")))
			continue
		}
		d.evidence = append(d.evidence, fmt.Sprintf("diagnose (%s): %s", when, r.Headline()))
		for _, t := range r.Threads {
			d.evidence = append(d.evidence, "diagnose: "+t.Summary())
		}
	}
	return d
}

// record adds the diagnosis to c's evidence, and what could not be read
// to its log.
func (d diagnosis) record(c *conformance.C) {
	for _, l := range d.unread {
		c.Logf("%s", l)
	}
	for _, l := range d.evidence {
		c.Evidencef("%s", l)
	}
}

// explainFailure observes c's server now (diagnoseServing) and records
// the diagnosis; a case calls it once it knows it fails, while the
// condition of the failure still holds, before Fatalf.
func explainFailure(c *conformance.C, when string) {
	diagnoseServing(c.Context(), c.Instance(), when).record(c)
}
