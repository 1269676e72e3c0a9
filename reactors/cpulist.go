package reactors

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxCPU bounds a CPU number: the size of the kernel's affinity mask that
// golang.org/x/sys/unix.CPUSet holds. Every CPU of a CPU list is below it.
const MaxCPU = 1024

// ParseCPUList reads a Linux CPU list, as the kernel prints
// Cpus_allowed_list and taskset -c reads it: comma-separated CPU numbers
// and inclusive ranges ("0-3,8"). The result is ascending and has no CPU
// twice; a CPU given twice, a range written backwards, a number at or
// above MaxCPU, or an empty list is refused, the error naming the bad
// part.
func ParseCPUList(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("an empty CPU list (want CPU numbers and ranges, 0-3,8)")
	}
	var out []int
	seen := map[int]bool{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, aerr := cpuNumber(lo)
		b := a
		var berr error
		if isRange {
			b, berr = cpuNumber(hi)
		}
		switch {
		case aerr != nil || berr != nil:
			return nil, fmt.Errorf("%q: want a CPU number (0..%d) or a range of them (0-3)", part, MaxCPU-1)
		case b < a:
			return nil, fmt.Errorf("%q: a range is written low-high", part)
		}
		for cpu := a; cpu <= b; cpu++ {
			if seen[cpu] {
				return nil, fmt.Errorf("CPU %d is given twice", cpu)
			}
			seen[cpu] = true
			out = append(out, cpu)
		}
	}
	slices.Sort(out)
	return out, nil
}

// cpuNumber reads one CPU number, 0..MaxCPU-1.
func cpuNumber(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n >= MaxCPU {
		return 0, errors.New("not a CPU number")
	}
	return n, nil
}

// FormatCPUList writes cpus as a Linux CPU list, ranges folded, in
// ascending order ("0-3,8"); ParseCPUList reads it back (for distinct
// CPUs). An empty list is "".
func FormatCPUList(cpus []int) string {
	s := slices.Clone(cpus)
	slices.Sort(s)
	s = slices.Compact(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(s[j]))
		}
		i = j
	}
	return b.String()
}

// LoopThread is where one loop thread ran: its OS thread id and the CPU
// Config.LoopCPUs pinned it to (-1: left on the mask it inherited).
type LoopThread struct {
	Tid int `json:"tid"`
	CPU int `json:"cpu"`
}

// cpuListValue is the flag.Value of --loop-cpus: a CPU list, or "" for
// none.
type cpuListValue struct{ p *[]int }

func (v cpuListValue) String() string {
	if v.p == nil {
		return ""
	}
	return FormatCPUList(*v.p)
}

func (v cpuListValue) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		*v.p = nil
		return nil
	}
	cpus, err := ParseCPUList(s)
	if err != nil {
		return err
	}
	*v.p = cpus
	return nil
}

// Get returns the list (flag.Getter).
func (v cpuListValue) Get() any { return slices.Clone(*v.p) }
