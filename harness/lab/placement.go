package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/reactorlab/reactorlab/reactors"
)

// maxCPU bounds a CPU number (the size of the kernel's affinity mask that
// golang.org/x/sys/unix.CPUSet holds).
const maxCPU = reactors.MaxCPU

// SidePlacement is one side's placement: the CPUs its process, and so
// every thread of it, may run on. It is a list of CPUs (distinct,
// ascending, each below 1024), a count ("the first N CPUs this process may
// use that the other side was not given", which Placement.Resolve turns
// into a list), or nothing: the zero value, unpinned (the mask the process
// inherits). It is a request, not the kernel's mask (unix.CPUSet): the
// lab turns it into one on each side's worker thread.
type SidePlacement struct {
	list  []int
	count int
}

// ListPlacement is the placement on the given CPUs (sorted; a CPU given
// twice counts once); none is unpinned.
func ListPlacement(cpus ...int) SidePlacement {
	s := slices.Clone(cpus)
	slices.Sort(s)
	return SidePlacement{list: slices.Compact(s)}
}

// CountPlacement is the placement on the first n CPUs left to the side
// (n > 0); see Placement.Resolve.
func CountPlacement(n int) SidePlacement { return SidePlacement{count: n} }

// Pinned reports whether the placement pins its side (a list or a count).
func (s SidePlacement) Pinned() bool { return len(s.list) > 0 || s.count > 0 }

// List returns the placement's CPUs, ascending: nil when unpinned or a count
// not yet resolved.
func (s SidePlacement) List() []int { return slices.Clone(s.list) }

// Count is N for a count placement, 0 otherwise.
func (s SidePlacement) Count() int { return s.count }

// Len is how many CPUs the placement holds: a list's length, a count's N, 0 when
// unpinned.
func (s SidePlacement) Len() int { return max(len(s.list), s.count) }

// Contains reports whether cpu is on the list.
func (s SidePlacement) Contains(cpu int) bool { return slices.Contains(s.list, cpu) }

// Equal reports whether two placements are the same list, or the same count.
func (s SidePlacement) Equal(o SidePlacement) bool {
	return s.count == o.count && slices.Equal(s.list, o.list)
}

// String is the command-line form: "none", a CPU list ("0-3,8", "1") or
// "count:N". ParseSidePlacement reads it back.
func (s SidePlacement) String() string {
	switch {
	case s.count > 0:
		return "count:" + strconv.Itoa(s.count)
	case len(s.list) == 0:
		return "none"
	}
	return reactors.FormatCPUList(s.list)
}

// ParseSidePlacement reads one side's command-line form: "none" (or -1) for
// unpinned, "count:N" (N > 0) for a count, or a Linux CPU list ("0-3,8";
// "4" is CPU 4). Errors name the bad part.
func ParseSidePlacement(v string) (SidePlacement, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "none" || v == "-1":
		return SidePlacement{}, nil
	case strings.HasPrefix(v, "count:"):
		n, err := strconv.Atoi(strings.TrimPrefix(v, "count:"))
		if err != nil || n <= 0 || n > maxCPU {
			return SidePlacement{}, fmt.Errorf("%q: want count:N, N a number of CPUs 1..%d", v, maxCPU)
		}
		return CountPlacement(n), nil
	}
	cpus, err := reactors.ParseCPUList(v)
	if err != nil {
		return SidePlacement{}, fmt.Errorf("%q: %w (or count:N, or none)", v, err)
	}
	return SidePlacement{list: cpus}, nil
}

// MarshalJSON writes a single CPU as its number and unpinned as -1 (so
// that records of one CPU a side read the same whatever the build that
// wrote them), anything else as its String.
func (s SidePlacement) MarshalJSON() ([]byte, error) {
	switch {
	case s.count == 0 && len(s.list) == 0:
		return []byte("-1"), nil
	case s.count == 0 && len(s.list) == 1:
		return []byte(strconv.Itoa(s.list[0])), nil
	}
	return json.Marshal(s.String())
}

// UnmarshalJSON reads what MarshalJSON writes: a CPU number, -1, or a
// string in ParseSidePlacement's form.
func (s *SidePlacement) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		if n < -1 || n >= maxCPU {
			return fmt.Errorf("cpu set %d: not a CPU number (0..%d) or -1", n, maxCPU-1)
		}
		*s = SidePlacement{}
		if n >= 0 {
			*s = ListPlacement(n)
		}
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("cpu set: want a CPU number, -1 or a string: %w", err)
	}
	v, err := ParseSidePlacement(str)
	if err != nil {
		return fmt.Errorf("cpu set %w", err)
	}
	*s = v
	return nil
}

// Placement is the placement of a run: each side's. The zero value
// (Unpinned) leaves both processes on every CPU this process may use. The
// sides never share a CPU: Resolve refuses a placement where they would.
type Placement struct {
	Server SidePlacement `json:"server"`
	Client SidePlacement `json:"client"`
}

// Unpinned leaves both processes on every CPU this process may use.
var Unpinned = Placement{}

// Pinned reports whether either side is pinned.
func (c Placement) Pinned() bool { return c.Server.Pinned() || c.Client.Pinned() }

// Equal reports whether both sides are the same placements.
func (c Placement) Equal(o Placement) bool {
	return c.Server.Equal(o.Server) && c.Client.Equal(o.Client)
}

// ParsePlacement parses the command-line form of a placement:
// "server=LIST,loadgen=LIST", each side a Linux CPU list ("0-3,8"; a
// single number is one CPU: "server=0,loadgen=1"),
// "count:N" (the first N CPUs this process may use that the other side was
// not given), or "none" (or -1) for unpinned. A side not named is unpinned
// ("client" is accepted for "loadgen"); "" or "none" leaves both
// unpinned. A list's commas continue it until the next "side=": in
// "server=0-1,4,loadgen=2" the server has 0, 1 and 4. Errors name the part
// that is wrong; whether the sets overlap or are allowed here is
// Resolve's to say.
func ParsePlacement(s string) (Placement, error) {
	var c Placement
	if t := strings.TrimSpace(s); t == "" || t == "none" {
		return c, nil
	}
	values := map[string]string{}
	var order []string
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok && len(order) > 0 {
			last := order[len(order)-1]
			values[last] += "," + part // a list's next element
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return Unpinned, fmt.Errorf("cpus %q: %q: want side=LIST (server=0,loadgen=1; server=0-3,loadgen=4-7; server=count:2)", s, part)
		}
		switch k {
		case "server":
		case "loadgen", "client":
			k = "loadgen"
		default:
			return Unpinned, fmt.Errorf("cpus %q: %q: unknown side %q (want server or loadgen)", s, part, k)
		}
		if _, dup := values[k]; dup {
			return Unpinned, fmt.Errorf("cpus %q: %s given twice", s, k)
		}
		values[k] = v
		order = append(order, k)
	}
	for _, k := range order {
		set, err := ParseSidePlacement(values[k])
		if err != nil {
			return Unpinned, fmt.Errorf("cpus %q: %s: %w", s, k, err)
		}
		if k == "server" {
			c.Server = set
		} else {
			c.Client = set
		}
	}
	return c, nil
}

// String is the command-line form, "server=0-3,loadgen=none" (one CPU a
// side: "server=0,loadgen=1"); ParsePlacement reads it back.
func (c Placement) String() string {
	return "server=" + c.Server.String() + ",loadgen=" + c.Client.String()
}

// Set parses s into c, so that a *Placement is a flag.Value.
func (c *Placement) Set(s string) error {
	v, err := ParsePlacement(s)
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// errOverlap is wrapped by Resolve's refusal of sides that share a CPU.
var errOverlap = errors.New("the two measured sides never share a CPU")

// Resolve returns the placement as lists, checked against allowed (the
// CPUs this process may use, ascending): a list must hold only allowed
// CPUs (refused naming the side, the CPU and the allowed list); the sides'
// lists must not share a CPU (refused naming both sides and the CPU); a
// count takes the first allowed CPUs the other side's list does not hold
// (the server's count before the load generator's), and is refused when
// too few are left (saying, when the placement needs more CPUs than are
// allowed, how many it needs in all). Unpinned sides stay unpinned.
func (c Placement) Resolve(allowed []int) (Placement, error) {
	ok := map[int]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	here := reactors.FormatCPUList(allowed)
	for _, side := range []struct {
		name string
		set  SidePlacement
	}{{"server", c.Server}, {"loadgen", c.Client}} {
		for _, cpu := range side.set.list {
			if !ok[cpu] {
				return Unpinned, fmt.Errorf("cpus %s: %s: CPU %d is not one this process may use (%s)", c, side.name, cpu, here)
			}
		}
	}
	for _, cpu := range c.Server.list {
		if c.Client.Contains(cpu) {
			if len(c.Server.list) == 1 && len(c.Client.list) == 1 {
				return Unpinned, fmt.Errorf("cpus %s: both sides on CPU %d: %w (give two CPUs, or none)", c, cpu, errOverlap)
			}
			return Unpinned, fmt.Errorf("cpus %s: CPU %d is in both the server's set and the loadgen's: %w", c, cpu, errOverlap)
		}
	}
	taken := map[int]bool{}
	for _, cpu := range slices.Concat(c.Server.list, c.Client.list) {
		taken[cpu] = true
	}
	out := c
	for _, side := range []struct {
		name string
		set  *SidePlacement
	}{{"server", &out.Server}, {"loadgen", &out.Client}} {
		if side.set.count == 0 {
			continue
		}
		var got []int
		for _, cpu := range allowed {
			if len(got) < side.set.count && !taken[cpu] {
				got = append(got, cpu)
				taken[cpu] = true
			}
		}
		if len(got) < side.set.count {
			return Unpinned, fmt.Errorf("cpus %s: %s: count:%d, but only %d of the CPUs this process may use (%s) are left to it%s", c, side.name, side.set.count, len(got), here, c.shortOf(allowed))
		}
		*side.set = SidePlacement{list: got}
	}
	return out, nil
}

// shortOf says, for Resolve's refusal of a count, how many CPUs the
// placement needs in all against the allowed ones, when it needs more
// than there are: ": the placement needs 8 CPUs (server 4, loadgen 4),
// this process may use 2"; "" otherwise.
func (c Placement) shortOf(allowed []int) string {
	need := c.Server.Len() + c.Client.Len()
	if need <= len(allowed) {
		return ""
	}
	return fmt.Sprintf(": the placement needs %d CPUs (server %d, loadgen %d), this process may use %d", need, c.Server.Len(), c.Client.Len(), len(allowed))
}

// DefaultPlacement is the default placement over allowed (the CPUs this process
// may use, ascending): the first half to the server and the rest to the
// load generator, so one CPU each on a 2-CPU machine (server=0,loadgen=1)
// and server=0-7,loadgen=8-15 on a 16-CPU one (an odd CPU goes to the
// load generator, which needs the headroom); unpinned with fewer than two.
func DefaultPlacement(allowed []int) Placement {
	if len(allowed) < 2 {
		return Unpinned
	}
	half := len(allowed) / 2
	return Placement{Server: ListPlacement(allowed[:half]...), Client: ListPlacement(allowed[half:]...)}
}

// DefaultPlacementRule says in a line what DefaultPlacement gives, for a record
// (a matrix's manifest) that names the CPUs it resolved to beside it.
const DefaultPlacementRule = "the first half of the CPUs this process may use to the server, the rest to the load generator"

// DefaultPlacementText says what DefaultPlacement gives, for --help.
const DefaultPlacementText = DefaultPlacementRule + " (one each on 2 CPUs: server=0,loadgen=1; unpinned with fewer than 2)"
