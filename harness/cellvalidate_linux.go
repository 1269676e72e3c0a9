//go:build linux

package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/reactorlab/reactorlab/harness/roles"
)

// ErrCellDirInUse is wrapped by CheckCellDir's refusal of a directory that
// already holds a run.
var ErrCellDirInUse = errors.New("holds a run already")

// CheckCellDir refuses a directory that already holds a run: one of
// CellFiles is there (the error, wrapping ErrCellDirInUse, names the
// first found). It refuses too a dir that is not a directory, or whose
// nearest existing parent is not one, so that the run could not create
// it: the error wraps syscall.ENOTDIR ("DIR: not a directory", or "DIR:
// PARENT is not a directory"). A directory that does not exist, or holds
// none of them, is accepted; so is one that cannot be read, whose error is
// left for the run to meet when it writes.
func CheckCellDir(dir string) error {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			switch {
			case st.IsDir():
			case d == filepath.Clean(dir):
				return fmt.Errorf("%s: %w", dir, syscall.ENOTDIR)
			default:
				return fmt.Errorf("%s: %s is %w", dir, d, syscall.ENOTDIR)
			}
			break
		}
		// Missing, or below a file (ENOTDIR): look further up. Any other
		// error (unreadable) is left for the run.
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) || d == filepath.Dir(d) {
			break
		}
	}
	for _, name := range CellFiles {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return fmt.Errorf("%s %w: %s is there (choose another directory, or remove it)", dir, ErrCellDirInUse, filepath.Join(dir, name))
		}
	}
	return nil
}

// Validate checks the cell before anything is started: exactly one of a
// reference reactor and a target command, the reactor's configuration as
// the serve role would check it (roles.CheckServe), the load as the
// loadgen role would (roles.CheckLoad; its addresses aside: the harness sets them), the
// start timeout, and a directory. Errors name the field.
func (cell CellSpec) Validate() error {
	if cell.Target.IsZero() {
		return errors.New("cell: exactly one of a reference reactor and a target command")
	}
	if d := cell.design(); d != "" {
		if err := roles.CheckServe(d, cell.serveConfig()); err != nil {
			return fmt.Errorf("cell: reactor %s: %w", d, err)
		}
	}
	load := cell.Load
	load.DataAddr, load.ControlAddr = "", "" // the harness sets them
	if err := roles.CheckLoad(load); err != nil {
		return fmt.Errorf("cell: load: %w", err)
	}
	if cell.StartTimeout < 0 || cell.StartTimeout > MaxStartTimeout {
		return fmt.Errorf("cell: start timeout %v (accepted: (0, %v], 0 means %v)", cell.StartTimeout, MaxStartTimeout, DefaultStartTimeout)
	}
	if cell.Dir == "" {
		return errors.New("cell: no directory for its files")
	}
	// The lab's own checks (placement on CPUs this process may use, grace,
	// bounds), before anything is written or started.
	ls, _ := cell.labSpec()
	if err := ls.Validate(); err != nil {
		return fmt.Errorf("cell: %w", err)
	}
	if _, err := cell.Place(); err != nil {
		return fmt.Errorf("cell: %w", err)
	}
	return nil
}
