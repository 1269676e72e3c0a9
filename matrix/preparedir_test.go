package matrix

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrepareDirRefusesADirectoryInUse: a directory holding anything is
// refused with ErrDirNotEmpty, its entries counted in words that agree
// with the count ("1 entry", "2 entries").
func TestPrepareDirRefusesADirectoryInUse(t *testing.T) {
	dir := t.TempDir()
	for i, want := range []string{"holds 1 entry (accepted", "holds 2 entries (accepted"} {
		if err := os.WriteFile(filepath.Join(dir, "f"+string(rune('a'+i))), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		err := prepareDir(dir)
		if !errors.Is(err, ErrDirNotEmpty) || !strings.Contains(err.Error(), want) {
			t.Errorf("%d entries: %v, want ErrDirNotEmpty saying %q", i+1, err, want)
		}
	}
}
