package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/reactorlab/reactorlab/harness/proc"
)

// validSpec is a validated Spec with its defaults applied.
type validSpec struct {
	Spec
	sysctls map[string]string // defaults with Spec.Sysctls over them
}

// Validate reports what Run would refuse of s before it starts anything,
// its fields and bounds, with the field named: everything Run checks but
// which of the placement's CPUs this process may use (Run resolves the
// placement against those: Placement.ResolveAllowed). It touches nothing
// outside s.
func (s Spec) Validate() error {
	_, err := s.validate()
	return err
}

// validate checks s and applies defaults. It touches nothing outside s.
func (s Spec) validate() (*validSpec, error) {
	v := &validSpec{Spec: s}
	var errs []error
	m, err := ParseMode(string(s.Mode))
	if err != nil {
		errs = append(errs, err)
	}
	v.Mode = m
	for _, p := range []struct {
		name string
		p    Proc
	}{{"server", s.Server}, {"client", s.Client}} {
		if p.name == "server" && s.Alone() {
			continue
		}
		if err := p.p.check(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
		}
	}
	if s.Alone() && (s.Control || s.ServerMayExit) {
		errs = append(errs, errors.New("no server, yet Control or ServerMayExit set"))
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"timeout", &v.Timeout, DefaultTimeout},
		{"ready", &v.Ready, proc.DefaultReady},
		{"grace", &v.Grace, DefaultGrace},
		{"sample period", &v.SampleEvery, DefaultSampleEvery},
	} {
		if *d.v < 0 {
			errs = append(errs, fmt.Errorf("%s %v is negative", d.name, *d.v))
		}
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if min := MinTimeout(v.Grace); v.Timeout < min {
		errs = append(errs, fmt.Errorf("timeout %v leaves the client no time: stopping takes up to %v with grace %v; want at least %v",
			v.Timeout, stopReserve(v.Grace), v.Grace, min))
	}
	if err := CheckServerCPU(s.ServerCPU); err != nil {
		errs = append(errs, fmt.Errorf("server_cpu %v: %w", s.ServerCPU, err))
	} else if s.ServerCPU > 0 && s.Alone() {
		errs = append(errs, errors.New("server_cpu set, but there is no server"))
	}
	// The sides' overlap and counts, as if every CPU were allowed: which
	// are is Run's to check (Placement.ResolveAllowed), here.
	if _, err := s.Placement.Resolve(everyCPU()); err != nil {
		errs = append(errs, err)
	}
	v.sysctls = maps.Clone(defaultSysctls)
	for _, k := range slices.Sorted(maps.Keys(s.Sysctls)) {
		val := s.Sysctls[k]
		if err := checkSysctl(k, val); err != nil {
			errs = append(errs, err)
			continue
		}
		v.sysctls[k] = val
	}
	// The spec travels to the run child through a 1 MiB pipe read.
	if b, err := json.Marshal(s); err == nil && len(b) > maxSpecSize {
		errs = append(errs, fmt.Errorf("the spec is %d bytes as JSON; at most %d (argv and env)", len(b), maxSpecSize))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return v, nil
}

// everyCPU is 0..maxCPU-1.
func everyCPU() []int {
	out := make([]int, maxCPU)
	for i := range out {
		out[i] = i
	}
	return out
}

// maxSpecSize bounds a Spec, which the run child reads from a bounded
// pipe.
const maxSpecSize = 512 << 10

// check refuses a Proc that cannot be started.
func (p Proc) check() error {
	if len(p.Argv) == 0 || p.Argv[0] == "" {
		return errors.New("empty Argv")
	}
	if name, ok := strings.CutPrefix(p.Argv[0], RolePrefix); ok {
		if internalRoles[name] {
			return fmt.Errorf("%q: the role %q is the harness's own", p.Argv[0], name)
		}
		if role(name) == nil {
			return fmt.Errorf("%q: no role %q is registered in this program (registered: %s)",
				p.Argv[0], name, strings.Join(Roles(), ", "))
		}
	}
	for _, kv := range p.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("env %q: want K=V", kv)
		}
	}
	return nil
}

// internalRoles are the harness's own roles, which no run may name.
var internalRoles = map[string]bool{"lab": true, "lab-keeper": true, "lab-nop": true}

// checkSysctl accepts only per-network-namespace keys ("net.…") with a
// one-line value, so nothing outside the lab's namespaces can be written.
func checkSysctl(k, v string) error {
	rest, ok := strings.CutPrefix(k, "net.")
	if !ok || rest == "" || strings.Contains(k, "..") || strings.HasSuffix(k, ".") ||
		strings.ContainsFunc(k, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
		}) {
		return fmt.Errorf("sysctl %q: want a net.* key (net.core.somaxconn)", k)
	}
	if v == "" || strings.ContainsAny(v, "\n\x00") {
		return fmt.Errorf("sysctl %s: value %q: want one non-empty line", k, v)
	}
	return nil
}

// CheckServerCPU refuses a server CPU cap (harness.CellSpec.ServerCPU,
// Spec.ServerCPU, in CPUs) outside proc.MinCPUShare..proc.MaxCPUShare,
// 0 (no cap) aside: NaN and infinities too. The error says what is
// accepted and leaves naming the value to the caller ("--server-cpu
// 0.01: " + the error).
func CheckServerCPU(share float64) error {
	if math.IsNaN(share) || math.IsInf(share, 0) || share < 0 || share > proc.MaxCPUShare || share > 0 && share < proc.MinCPUShare {
		return fmt.Errorf("want a number of CPUs, %v..%d, or 0 for no cap", proc.MinCPUShare, proc.MaxCPUShare)
	}
	return nil
}
