package procfs

import (
	"strconv"
	"strings"
)

// CPUTimes is one CPU's line of /proc/stat ("cpuN user nice system idle
// iowait irq softirq steal …"): the time it spent in each state since
// boot, in clock ticks (USER_HZ). The counters only grow (iowait aside,
// which the kernel may step back on an idle CPU).
type CPUTimes struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal uint64
}

// StatPath is the kernel's system-wide statistics file.
const StatPath = "/proc/stat"

// ParseCPUStat reads the per-CPU lines of /proc/stat ("cpu0", "cpu1", …;
// the "cpu" total and the other lines are skipped), by CPU number. Each
// must have the eight counters through steal (Linux 2.6.11); a counter that
// is not a number is refused.
func ParseCPUStat(b []byte) (map[int]CPUTimes, error) {
	const file = "stat"
	out := map[int]CPUTimes{}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil || n < 0 {
			return nil, bad(file, f[0], "not a CPU number")
		}
		if len(f) < 9 {
			return nil, bad(file, f[0], "%d counters, want at least 8", len(f)-1)
		}
		var v [8]uint64
		names := [8]string{"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"}
		for i := range v {
			if v[i], err = strconv.ParseUint(f[1+i], 10, 64); err != nil {
				return nil, badValue(file, f[0]+" "+names[i], err)
			}
		}
		out[n] = CPUTimes{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]}
	}
	return out, nil
}

// ReadCPUStat reads the per-CPU lines of /proc/stat.
func ReadCPUStat() (map[int]CPUTimes, error) {
	return read(StatPath, ParseCPUStat)
}
