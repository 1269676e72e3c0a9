package matrix

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reactorlab/reactorlab/results"
	"github.com/reactorlab/reactorlab/results/figure"
)

// ErrMerge is wrapped by Merge's errors about the shards themselves (as
// opposed to files that cannot be read or written).
var ErrMerge = errors.New("matrix: cannot merge")

// Merge joins the run directories of the shards of one matrix run into dst
// (created; if it exists it must be empty). The shards must come from the
// same spec (name, text, repeats and cells), the same build (commit), and
// be the n distinct shards i/n of one split, all of them. Every run's
// directory is copied unchanged, so every interval log, and any HDR
// histogram merged from them, is exactly what the shard recorded: a merge
// of shards 1/n … n/n holds the same runs, in the same directories, as an
// unsharded run of the plan. The merged manifest lists every shard and its
// runs in shard order. The reports are not written here: see Render.
func Merge(dst string, srcs []string) (*results.Manifest, error) {
	if len(srcs) == 0 {
		return nil, fmt.Errorf("%w: no shard directories", ErrMerge)
	}
	var ms []*results.Manifest
	for _, s := range srcs {
		m, err := results.ReadManifest(s)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	out, err := mergeManifests(srcs, ms)
	if err != nil {
		return nil, err
	}
	if err := prepareDir(dst); err != nil {
		return nil, err
	}
	for i, m := range ms {
		for _, r := range m.Runs {
			if err := copyTree(filepath.Join(srcs[i], r.Dir), filepath.Join(dst, r.Dir)); err != nil {
				return nil, fmt.Errorf("matrix: merge %s: %w", srcs[i], err)
			}
		}
	}
	if err := results.WriteManifest(dst, out); err != nil {
		return nil, fmt.Errorf("matrix: merge: %w", err)
	}
	return out, nil
}

// mergeManifests checks that ms are the shards of one run and joins them.
func mergeManifests(srcs []string, ms []*results.Manifest) (*results.Manifest, error) {
	first := ms[0]
	bad := func(i int, format string, args ...any) error {
		return fmt.Errorf("%w: %s and %s: %s", ErrMerge, srcs[0], srcs[i], fmt.Sprintf(format, args...))
	}
	byIndex := map[int]string{}
	count := 0
	for i, m := range ms {
		switch {
		case m.Spec.Name != first.Spec.Name || m.Spec.Text != first.Spec.Text || m.Spec.Repeats != first.Spec.Repeats:
			return nil, bad(i, "different specs (%s, %s)", first.Spec.Name, m.Spec.Name)
		case !slices.EqualFunc(m.Cells, first.Cells, func(a, b results.CellInfo) bool {
			return a.ID == b.ID && maps.Equal(a.Config, b.Config)
		}):
			return nil, bad(i, "different cells")
		case otherBuild(first.Tool, m.Tool) != "":
			return nil, bad(i, "different builds (%s)", otherBuild(first.Tool, m.Tool))
		}
		for _, s := range m.Shards {
			if count == 0 {
				count = s.Count
			}
			if s.Count != count {
				return nil, bad(i, "shards of different splits (%d/%d beside ones of %d)", s.Index, s.Count, count)
			}
			if prev, dup := byIndex[s.Index]; dup {
				return nil, fmt.Errorf("%w: shard %d/%d is in both %s and %s", ErrMerge, s.Index, s.Count, prev, srcs[i])
			}
			byIndex[s.Index] = srcs[i]
		}
	}
	var missing []string
	for i := 1; i <= count; i++ {
		if _, ok := byIndex[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, count))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: shard %s missing (accepted: all %d shards of one split)", ErrMerge, strings.Join(missing, ", "), count)
	}
	out := &results.Manifest{Format: results.ManifestFormat, Tool: first.Tool, Spec: first.Spec, Cells: first.Cells}
	for _, m := range ms {
		out.Shards = append(out.Shards, m.Shards...)
		out.Runs = append(out.Runs, m.Runs...)
	}
	slices.SortFunc(out.Shards, func(a, b results.ShardInfo) int { return a.Index - b.Index })
	slices.SortStableFunc(out.Runs, func(a, b results.RunRecord) int {
		if a.Shard != b.Shard {
			return a.Shard - b.Shard
		}
		return a.Seq - b.Seq
	})
	if err := out.Check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMerge, err)
	}
	return out, nil
}

// copyTree copies the regular files and directories under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, to)
		}
		return nil // sockets, links: not part of a run's record
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// SuiteDirs returns the run directories under dir: dir itself when it
// holds a manifest (a single spec's run), else its subdirectories that
// do (a suite's run, one subdirectory per spec), sorted by name, as paths
// relative to dir ("." for dir itself).
func SuiteDirs(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, results.ManifestFile)); err == nil {
		return []string{"."}, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), results.ManifestFile)); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("matrix: %s holds no %s, nor subdirectories with one: not a run directory", dir, results.ManifestFile)
	}
	return out, nil
}

// prepareDir creates dir, or accepts it if it exists and is empty.
func prepareDir(dir string) error {
	if dir == "" {
		return errors.New("matrix: no run directory")
	}
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("matrix: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("matrix: %w", err)
	case len(ents) > 0:
		return fmt.Errorf("%w: %s holds %s (accepted: a new or empty directory)", ErrDirNotEmpty, dir, figure.Counted(len(ents), "entry", "entries"))
	}
	return nil
}

// ErrDirNotEmpty is wrapped when Options.Dir already holds files.
var ErrDirNotEmpty = errors.New("matrix: run directory is not empty")
