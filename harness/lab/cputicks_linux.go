//go:build linux

package lab

import (
	"fmt"
	"time"

	"github.com/reactorlab/reactorlab/internal/procfs"
)

// maxCPUTicks bounds ProcResult.CPUTicks: past it every second sample is
// dropped, so a long run keeps an even spread at a coarser step.
const maxCPUTicks = 512

// readCPUTicks reads /proc/stat's lines of the given CPUs.
func readCPUTicks(cpus []int) (CPUTicks, error) {
	byCPU, err := procfs.ReadCPUStat()
	if err != nil {
		return CPUTicks{}, err
	}
	t := CPUTicks{At: time.Now()}
	for _, c := range cpus {
		v, ok := byCPU[c]
		if !ok {
			return CPUTicks{}, fmt.Errorf("/proc/stat has no line for CPU %d", c)
		}
		busy := v.User + v.Nice + v.System + v.IRQ + v.SoftIRQ + v.Steal
		t.Busy = append(t.Busy, busy)
		t.Total = append(t.Total, busy+v.Idle+v.IOWait)
		t.UserSteal = append(t.UserSteal, v.User+v.Nice+v.Steal)
	}
	return t, nil
}

// noteTicks appends a sample of the side's CPUs, with its own threads'
// time (own, read just before), to CPUTicks (pinned sides only), thinning
// the series at maxCPUTicks.
func (p *ProcResult) noteTicks(own *OwnTime) {
	if !p.Placement.Pinned() {
		return
	}
	t, err := readCPUTicks(p.Placement.List())
	if err != nil {
		return
	}
	t.Own = own
	if len(p.CPUTicks) >= maxCPUTicks {
		kept := p.CPUTicks[:0]
		for i := 0; i < len(p.CPUTicks); i += 2 {
			kept = append(kept, p.CPUTicks[i])
		}
		p.CPUTicks = kept
	}
	p.CPUTicks = append(p.CPUTicks, t)
}
