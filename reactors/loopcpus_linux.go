//go:build linux

package reactors

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// loopCPU is the CPU loop id is pinned to under cfg, -1 for none: loop i
// on LoopCPUs[i mod len(LoopCPUs)].
func loopCPU(cfg *Config, id int) int {
	if len(cfg.LoopCPUs) == 0 {
		return -1
	}
	return cfg.LoopCPUs[id%len(cfg.LoopCPUs)]
}

// checkLoopCPUs refuses, before anything starts, a LoopCPUs CPU that the
// calling thread (whose mask the loop threads inherit) may not use.
func checkLoopCPUs(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return fmt.Errorf("loop-cpus: %w", os.NewSyscallError("sched_getaffinity", err))
	}
	var mine []int
	for i := range MaxCPU {
		if allowed.IsSet(i) {
			mine = append(mine, i)
		}
	}
	for _, c := range cpus {
		if !allowed.IsSet(c) {
			return fmt.Errorf("%w: loop-cpus = %s: CPU %d is not one this process may use (%s)", ErrConfig, FormatCPUList(cpus), c, FormatCPUList(mine))
		}
	}
	return nil
}

// pinLoop pins the calling thread, which must be the loop's locked one,
// to the loop's CPU (loopCPU) and reads the mask back; it records the CPU
// in force. A loop without a CPU keeps its mask.
func (l *Loop) pinLoop() error {
	cpu := loopCPU(&l.r.cfg, l.id)
	if cpu < 0 {
		l.cpu.Store(-1)
		return nil
	}
	var want, got unix.CPUSet
	want.Set(cpu)
	if err := unix.SchedSetaffinity(0, &want); err != nil {
		return fmt.Errorf("loop %d: pin to CPU %d: %w", l.id, cpu, os.NewSyscallError("sched_setaffinity", err))
	}
	if err := unix.SchedGetaffinity(0, &got); err != nil {
		return fmt.Errorf("loop %d: pin to CPU %d: %w", l.id, cpu, os.NewSyscallError("sched_getaffinity", err))
	}
	if got != want {
		return fmt.Errorf("loop %d: pin to CPU %d: the kernel kept %d CPUs", l.id, cpu, got.Count())
	}
	l.cpu.Store(int32(cpu))
	return nil
}

// LoopPlacement returns each loop thread and the CPU it was pinned to, in
// loop order (Tid 0 for a loop not yet running).
func (r *Reactor) LoopPlacement() []LoopThread {
	out := make([]LoopThread, len(r.loops))
	for i, l := range r.loops {
		out[i] = LoopThread{Tid: int(l.tid.Load()), CPU: int(l.cpu.Load())}
	}
	return out
}
