package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/reactorlab/reactorlab/internal/uring"
	"github.com/reactorlab/reactorlab/results/record"
	"github.com/reactorlab/reactorlab/results/stats"
)

// The files of a run directory, the output of one matrix run (or of the
// merge of its shards).
const (
	// ManifestFile describes the run: tool, machines, spec, cells and every
	// run of every cell with its metrics. Everything else in the directory
	// is derived from it and the runs' interval logs.
	ManifestFile = "manifest.json"
	// AnalysisFile is the Analysis as JSON.
	AnalysisFile = "summary.json"
	// MarkdownFile is the report a person reads in a terminal or a pull
	// request.
	MarkdownFile = "report.md"
	// HTMLFile is the self-contained report with plots.
	HTMLFile = "report.html"
	// BenchFile holds one Go benchmark-format line per run, for benchstat.
	BenchFile = "bench.txt"
	// RunsDir holds one directory per run (RunRecord.Dir), each with the
	// harness's files for that run, among them RunHlogFile.
	RunsDir = "runs"
	// RunHlogFile is the load generator's interval log in a run's
	// directory.
	RunHlogFile = "loadgen.hlog"
)

// ManifestFormat is the version of the manifest's JSON layout.
const ManifestFormat = 1

// ErrManifest is wrapped by every error ReadManifest returns for a manifest
// that is not one this version reads.
var ErrManifest = errors.New("results: bad manifest")

// Manifest is the record of a run directory. Invariants of a manifest this
// package writes or accepts (Manifest.Check): Cells is non-empty, has unique
// IDs and starts with the baseline (Factor ""); every run names a cell of
// Cells, a shard of Shards, a repeat in 1..Spec.Repeats and a directory
// under RunsDir; no two runs share a directory, or a (shard, seq) pair.
type Manifest struct {
	Format int      `json:"format"`
	Tool   Tool     `json:"tool"`
	Spec   SpecInfo `json:"spec"`
	// Cells are the spec's expanded cells, baseline first, in spec order.
	Cells []CellInfo `json:"cells"`
	// Shards are the shards whose runs the directory holds: one for an
	// unsharded run, several after a merge.
	Shards []ShardInfo `json:"shards"`
	// Runs are every run, in the order (shard, seq).
	Runs []RunRecord `json:"runs"`
}

// Tool identifies the build that made the runs.
type Tool struct {
	Version  string `json:"version"`  // module version, or "(devel)"
	Commit   string `json:"commit"`   // VCS revision, "" if unknown
	Modified bool   `json:"modified"` // the work tree had changes
	Go       string `json:"go"`       // Go version
	// Executable is the SHA-256 (hex) of the executable that made the
	// runs, "" if unknown: what tells two builds apart when Commit does
	// not (no commit known, or Modified).
	Executable string `json:"executable,omitempty"`
}

// Machine describes where a shard ran.
type Machine struct {
	Hostname string `json:"hostname"`
	Kernel   string `json:"kernel"` // uname release and version
	CPUModel string `json:"cpu_model"`
	CPUs     int    `json:"cpus"` // online CPUs
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	// IOURing is what the kernel offers io_uring users (features and
	// supported opcodes, by name), probed when the shard ran; nil when it
	// could not be probed, IOURingError then saying why (a kernel without
	// io_uring, the io_uring_disabled sysctl). Records written before it
	// was kept have neither.
	IOURing      *uring.Probe `json:"io_uring,omitempty"`
	IOURingError string       `json:"io_uring_error,omitempty"`
}

// SpecInfo is the spec the runs come from.
type SpecInfo struct {
	Name string `json:"name"`
	// Source is "embedded:<name>" or the file it was read from.
	Source string `json:"source"`
	// Text is the YAML as given, so the run can be repeated exactly.
	Text    string `json:"text"`
	Repeats int    `json:"repeats"`
}

// CellInfo is one cell of the spec.
type CellInfo struct {
	// ID is unique in the spec: "baseline" or "factor=value".
	ID string `json:"id"`
	// Factor is the varied field ("" for the baseline) and Value its value
	// in this cell.
	Factor string `json:"factor,omitempty"`
	Value  string `json:"value,omitempty"`
	// Label, when not "", is the name the spec gave the cell's value in
	// place of Value (a {cmd, label} target's label): ID is then
	// "factor=label", and Config keeps the value itself. A manifest
	// without it reads as cells without labels.
	Label string `json:"label,omitempty"`
	// Config is every field of the cell in canonical text, keyed by field
	// name (the baseline's values but for Factor).
	Config map[string]string `json:"config"`
	// Describe is a one-line description for a person.
	Describe string `json:"describe"`
}

// Baseline reports whether c is the baseline cell.
func (c CellInfo) Baseline() bool { return c.Factor == "" }

// ShardInfo is one shard's share of the runs and where it ran.
type ShardInfo struct {
	// Index is in 1..Count; an unsharded run is shard 1/1.
	Index int `json:"index"`
	Count int `json:"count"`
	// Cells are the IDs of the factor cells this shard ran (the baseline
	// runs with each of them).
	Cells   []string `json:"cells"`
	Machine Machine  `json:"machine"`
	// Placement is the CPU placement asked for ("server=0,loadgen=1"), Mode
	// the lab mode asked for (auto, lab, loopback).
	Placement string `json:"placement"`
	Mode      string `json:"mode"`
	// Resolved is the baseline cell's placement and load generator loops
	// as resolved where the shard ran; empty in manifests written before
	// it was recorded.
	Resolved
	// CellPlacements are the cells that were placed otherwise than the
	// baseline (their own cpus, or another number of load generator
	// loops), in cell order; the cells not listed were placed as
	// Resolved says.
	CellPlacements []CellPlacement `json:"cell_placements,omitempty"`
	Started        time.Time       `json:"started"`
	Finished       time.Time       `json:"finished"`
	// Interrupted is true if the shard stopped before its last run.
	Interrupted bool `json:"interrupted,omitempty"`
	// Resumed lists, in order, each time the shard was continued after it
	// stopped early (reactorlab matrix --resume); Finished is then the end
	// of the last part.
	Resumed []Resume `json:"resumed,omitempty"`
}

// Resolved is a placement and the load generator's loops as they were
// resolved on the shard's machine: what a cell ran with, where the spec
// or the command line left it a count, a default or nothing. Its zero
// value is "not recorded" (a manifest written before it was).
type Resolved struct {
	// PlacementResolved is the placement with every side a CPU list
	// ("server=0-7,loadgen=8-15"; "none" for an unpinned side), never a
	// count.
	PlacementResolved string `json:"placement_resolved,omitempty"`
	// PlacementDefault is "default: " and the default's rule when the
	// placement was the default, "" when it was asked for.
	PlacementDefault string `json:"placement_default,omitempty"`
	// LoadgenLoops is the number of the load generator's event loops, and
	// LoadgenLoopsDefault "default: " and the default's rule when the
	// cell left it to the default ("" when it named a number).
	LoadgenLoops        int    `json:"loadgen_loops,omitempty"`
	LoadgenLoopsDefault string `json:"loadgen_loops_default,omitempty"`
}

// Text is the resolution for a person: "server=0-3,loadgen=4-7 (default:
// …), 4 load generator loops (default: …)"; "" when not recorded.
func (r Resolved) Text() string {
	if r == (Resolved{}) {
		return ""
	}
	s := r.PlacementResolved
	if r.PlacementDefault != "" {
		s += " (" + r.PlacementDefault + ")"
	}
	if r.LoadgenLoops > 0 {
		loops := "loops"
		if r.LoadgenLoops == 1 {
			loops = "loop"
		}
		s += fmt.Sprintf(", %d load generator %s", r.LoadgenLoops, loops)
		if r.LoadgenLoopsDefault != "" {
			s += " (" + r.LoadgenLoopsDefault + ")"
		}
	}
	return s
}

// CellPlacement is one cell's resolution (Resolved), where it differs
// from its shard's.
type CellPlacement struct {
	// Cell is the cell's ID (CellInfo.ID).
	Cell string `json:"cell"`
	Resolved
}

// Resume is one continuation of an interrupted shard: when it started,
// how many of the runs recorded before it kept (the shard's first Kept
// runs, in order), and how many recorded runs it dropped to run them
// again (the run the interruption cut short, and the baseline run of its
// pair).
type Resume struct {
	At      time.Time `json:"at"`
	Kept    int       `json:"kept"`
	Dropped int       `json:"dropped"`
}

// RunRecord is one run of one cell.
//
// Runs come in pairs: for each repeat of each factor cell, a baseline run
// and then that cell's run, so that drift of the machine cancels in the
// pair's ratio (A B A C … A B A C …). Pair is the factor cell's ID for both
// runs of a pair. A spec without factors has only baseline runs, with Pair
// "".
type RunRecord struct {
	Shard  int    `json:"shard"` // ShardInfo.Index
	Seq    int    `json:"seq"`   // 1-based position in its shard's order
	Cell   string `json:"cell"`
	Repeat int    `json:"repeat"`
	Pair   string `json:"pair,omitempty"`
	// Dir is the run's directory, relative to the run directory.
	Dir      string    `json:"dir"`
	Started  time.Time `json:"started"`
	ElapsedS float64   `json:"elapsed_s"`
	// Mode is where the run took place (lab or loopback).
	Mode string `json:"mode"`
	// MeasuredFrom is where the measured period starts in the clock of the
	// run's interval log (the load generator's start plus its warm-up);
	// intervals that start before it are warm-up.
	MeasuredFrom time.Time `json:"measured_from"`
	// Valid is false when the run is not trustworthy; Invalid says why.
	// Analyses use valid runs only.
	Valid   bool     `json:"valid"`
	Invalid []string `json:"invalid,omitempty"`
	// Contended says, side by side, whose CPUs went to other processes
	// while its threads waited for them (harness.CPUBusy.Contended): the
	// run's figures are the machine's as much as the design's. It stays
	// valid, but analyses and comparisons leave it out (Comparable).
	Contended []string `json:"contended,omitempty"`
	// Flagged are the load generator's gates the run failed, a line each
	// ("independence (control): fail: …"): the run is analysed, and its
	// cell lists them, since its figures mean less than a passing run's.
	Flagged []string `json:"flagged,omitempty"`
	// Thinning maps a latency class whose samples failed the independence
	// gate to the gate's thinning k (Interval's Thinning; stats.ThinningUnknown
	// when none up to stats.MaxThinning sufficed): intervals over its histogram
	// count only every k-th sample.
	Thinning map[string]int `json:"thinning,omitempty"`
	// Metrics are the run's values, keyed by Metric.Name; a metric the run
	// could not measure (a black box has no reactor statistics) is absent.
	Metrics map[string]float64 `json:"metrics"`
}

// Comparable reports whether the run is one analyses and comparisons
// use: valid, and not contended.
func (r *RunRecord) Comparable() bool { return r.Valid && len(r.Contended) == 0 }

// Cell returns the cell called id.
func (m *Manifest) Cell(id string) (CellInfo, bool) {
	for _, c := range m.Cells {
		if c.ID == id {
			return c, true
		}
	}
	return CellInfo{}, false
}

// CellThinning is the thinning for class in the merged histogram of
// cell's comparable runs: the largest k of any (stats.ThinningUnknown if any
// is), 0 when none failed the independence gate for it.
func (m *Manifest) CellThinning(cell, class string) int {
	return cellThinning(m.Runs, cell, class)
}

func cellThinning(runs []RunRecord, cell, class string) int {
	k := 0
	for i := range runs {
		r := &runs[i]
		if r.Cell != cell || !r.Comparable() {
			continue
		}
		switch t := r.Thinning[class]; {
		case t == stats.ThinningUnknown:
			return stats.ThinningUnknown
		case t > k:
			k = t
		}
	}
	return k
}

// RunCounts counts runs: Total recorded, Valid of them passed the self
// check, and Contended of the valid ones are left out of analyses and
// comparisons (RunRecord.Comparable), so Valid − Contended were analysed.
type RunCounts struct {
	Total, Valid, Contended int
}

// Text is "30/36 runs valid" with ", 4 of them contended (left out)" when
// there are such.
func (n RunCounts) Text() string {
	s := fmt.Sprintf("%d/%d runs valid", n.Valid, n.Total)
	if n.Contended > 0 {
		s += fmt.Sprintf(", %d of them contended (left out)", n.Contended)
	}
	return s
}

// ShardRuns counts the runs of shard index.
func (m *Manifest) ShardRuns(index int) RunCounts {
	return m.countRuns(func(r *RunRecord) bool { return r.Shard == index })
}

// AllRuns counts every run of m.
func (m *Manifest) AllRuns() RunCounts {
	return m.countRuns(func(*RunRecord) bool { return true })
}

func (m *Manifest) countRuns(keep func(*RunRecord) bool) RunCounts {
	var n RunCounts
	for i := range m.Runs {
		r := &m.Runs[i]
		if !keep(r) {
			continue
		}
		n.Total++
		if r.Valid {
			n.Valid++
			if !r.Comparable() {
				n.Contended++
			}
		}
	}
	return n
}

// Check reports the first broken invariant of m (see Manifest), wrapping
// ErrManifest.
func (m *Manifest) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrManifest, fmt.Sprintf(format, args...))
	}
	if m.Format != ManifestFormat {
		return bad("format %d (this build reads %d)", m.Format, ManifestFormat)
	}
	if len(m.Cells) == 0 {
		return bad("no cells")
	}
	if !m.Cells[0].Baseline() {
		return bad("first cell %q is not the baseline", m.Cells[0].ID)
	}
	if m.Spec.Repeats < 1 {
		return bad("spec.repeats %d", m.Spec.Repeats)
	}
	cells := map[string]bool{}
	for i, c := range m.Cells {
		if c.ID == "" || cells[c.ID] {
			return bad("cells[%d]: empty or duplicate id %q", i, c.ID)
		}
		if i > 0 && c.Baseline() {
			return bad("cells[%d] %q: a second baseline", i, c.ID)
		}
		cells[c.ID] = true
	}
	shards := map[int]bool{}
	for _, s := range m.Shards {
		if s.Index < 1 || s.Index > s.Count || shards[s.Index] {
			return bad("shard %d/%d: out of range or repeated", s.Index, s.Count)
		}
		shards[s.Index] = true
	}
	dirs := map[string]bool{}
	seqs := map[[2]int]bool{}
	for i, r := range m.Runs {
		switch {
		case !cells[r.Cell]:
			return bad("runs[%d]: unknown cell %q", i, r.Cell)
		case r.Pair != "" && !cells[r.Pair]:
			return bad("runs[%d]: unknown pair %q", i, r.Pair)
		case !shards[r.Shard]:
			return bad("runs[%d]: unknown shard %d", i, r.Shard)
		case r.Repeat < 1 || r.Repeat > m.Spec.Repeats:
			return bad("runs[%d]: repeat %d outside 1..%d", i, r.Repeat, m.Spec.Repeats)
		case !localRunDir(r.Dir):
			return bad("runs[%d]: directory %q is not under %s/", i, r.Dir, RunsDir)
		case dirs[r.Dir]:
			return bad("runs[%d]: directory %q used twice", i, r.Dir)
		case seqs[[2]int{r.Shard, r.Seq}]:
			return bad("runs[%d]: shard %d seq %d used twice", i, r.Shard, r.Seq)
		}
		dirs[r.Dir] = true
		seqs[[2]int{r.Shard, r.Seq}] = true
	}
	return nil
}

// localRunDir reports whether dir is a clean relative path under RunsDir.
func localRunDir(dir string) bool {
	return filepath.IsLocal(dir) && filepath.Clean(dir) == dir && strings.HasPrefix(dir, RunsDir+"/")
}

// WriteManifest writes m as indented JSON into dir/ManifestFile, through a
// temporary file and a rename, so a reader never sees half a manifest.
func WriteManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	return WriteFileAtomic(filepath.Join(dir, ManifestFile), append(b, '\n'))
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory and a rename.
func WriteFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// ReadManifest reads and checks dir/ManifestFile.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrManifest, filepath.Join(dir, ManifestFile), err)
	}
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}

// CellHistograms merges, per cell and class, the measured histograms of
// every valid run of each cell in the run directory dir: the baseline's are
// the merge of all its runs. The merge is lossless, so the result does not
// depend on how the runs were sharded. A cell without valid runs is absent.
func CellHistograms(dir string, m *Manifest) (map[string]map[string]*hdrhistogram.Histogram, error) {
	out := map[string]map[string]*hdrhistogram.Histogram{}
	runs := slices.Clone(m.Runs)
	// Merge in a fixed order (cell, repeat, pair): merging is exact, but a
	// fixed order keeps even the histograms' internal layout independent
	// of the shards.
	slices.SortFunc(runs, func(a, b RunRecord) int {
		return strings.Compare(fmt.Sprintf("%s\x00%09d\x00%s", a.Cell, a.Repeat, a.Pair), fmt.Sprintf("%s\x00%09d\x00%s", b.Cell, b.Repeat, b.Pair))
	})
	for _, r := range runs {
		if !r.Comparable() {
			continue
		}
		hs, err := record.MeasuredHistograms(filepath.Join(dir, r.Dir, RunHlogFile), r.MeasuredFrom)
		if err != nil {
			return nil, fmt.Errorf("cell %s repeat %d: %w", r.Cell, r.Repeat, err)
		}
		if out[r.Cell] == nil {
			out[r.Cell] = map[string]*hdrhistogram.Histogram{}
		}
		for class, h := range hs {
			if err := record.MergeClass(out[r.Cell], class, h); err != nil {
				return nil, fmt.Errorf("cell %s repeat %d: %w", r.Cell, r.Repeat, err)
			}
		}
	}
	return out, nil
}
