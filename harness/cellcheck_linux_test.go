//go:build linux

package harness

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/reactorlab/reactorlab/target"
)

func TestCheckCommand(t *testing.T) {
	for _, ok := range []string{"true", "/bin/sh -c 'exit 0'", "cd / && /nonexistent", "exec /nonexistent", "X=1 /nonexistent"} {
		if err := CheckCommand(ok); err != nil {
			t.Errorf("CheckCommand(%q) = %v, want it left to the shell or accepted", ok, err)
		}
	}
	dir := t.TempDir()
	notExec := filepath.Join(dir, "server")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"/nonexistent/server --listen {addr}", "no-such-program-here {addr}", notExec, dir} {
		err := CheckCommand(bad)
		var sf *target.StartError
		if !errors.As(err, &sf) || sf.Cause != target.StartMissing || !strings.Contains(err.Error(), strings.Fields(bad)[0]) {
			t.Errorf("CheckCommand(%q) = %v, want a missing program named", bad, err)
		}
	}
}

func TestCheckCellDir(t *testing.T) {
	dir := t.TempDir()
	if err := CheckCellDir(filepath.Join(dir, "new")); err != nil {
		t.Errorf("a new directory: %v", err)
	}
	if err := CheckCellDir(dir); err != nil {
		t.Errorf("an empty directory: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644)
	if err := CheckCellDir(dir); err != nil {
		t.Errorf("a directory without a run's file: %v", err)
	}
	// A file where the directory, or one of its parents, would be.
	file := filepath.Join(dir, "notes.txt")
	for path, want := range map[string]string{
		file:                            file + ": not a directory",
		filepath.Join(file, "a", "run"): filepath.Join(file, "a", "run") + ": " + file + " is not a directory",
	} {
		if err := CheckCellDir(path); !errors.Is(err, syscall.ENOTDIR) || err.Error() != want {
			t.Errorf("CheckCellDir(%s) = %v, want %q", path, err, want)
		}
	}
	for _, name := range CellFiles {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, name), nil, 0o644)
		if err := CheckCellDir(d); !errors.Is(err, ErrCellDirInUse) || !strings.Contains(err.Error(), name) {
			t.Errorf("a directory holding %s: %v", name, err)
		}
	}
}
