//go:build !linux

package proc

import (
	"context"
	"errors"
	"fmt"
)

// A Process is one started target. Start is Linux-only; elsewhere it fails
// and no Process exists.
type Process struct{}

// Start fails with errors.ErrUnsupported: targets run on Linux only.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	name := ""
	if len(spec.Argv) > 0 {
		name = spec.Argv[0]
	}
	return nil, fmt.Errorf("start %s: %w", name, errors.ErrUnsupported)
}

func (p *Process) Pid() int                             { return 0 }
func (p *Process) Addr() string                         { return "" }
func (p *Process) Done() <-chan struct{}                { return nil }
func (p *Process) StderrTail() string                   { return "" }
func (p *Process) StdoutTail() string                   { return "" }
func (p *Process) Stop() (Exit, error)                  { return Exit{}, errors.ErrUnsupported }
func (p *Process) Usage() (Usage, error)                { return Usage{}, errors.ErrUnsupported }
func (p *Process) ThreadCPU() (int64, error)            { return 0, errors.ErrUnsupported }
func (p *Process) Group() ([]int, error)                { return nil, errors.ErrUnsupported }
func (p *Process) GroupUsage() (Usage, error)           { return Usage{}, errors.ErrUnsupported }
func ReadUsage(pid int) (Usage, error)                  { return Usage{}, errors.ErrUnsupported }
func ReadThreadCPU(pid int) (int64, error)              { return 0, errors.ErrUnsupported }
func ReadSchedstat(pid int) (Schedstat, error)          { return Schedstat{}, errors.ErrUnsupported }
func (p *Process) GroupSchedstat() (Schedstat, error)   { return Schedstat{}, errors.ErrUnsupported }
func ReadTaskSchedstat(pid, tid int) (Schedstat, error) { return Schedstat{}, errors.ErrUnsupported }
func (p *Process) Affinity() ([]ThreadAffinity, error)  { return nil, errors.ErrUnsupported }
func ReadAffinity(pid int) ([]ThreadAffinity, error)    { return nil, errors.ErrUnsupported }
