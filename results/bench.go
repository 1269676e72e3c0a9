package results

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// BenchPackage is the pkg: of WriteBench's output.
const BenchPackage = "github.com/reactorlab/reactorlab/matrix"

// BenchUnit is how WriteBench writes one catalogue metric: in Unit, after
// multiplying the catalogue's value by Scale.
//
// The units are chosen for golang.org/x/perf's benchstat (checked with its
// 2026 version):
//   - benchstat "tidies" a unit whose numerator has the token "ns" (tokens
//     are separated by '-', '*' and '/') into "sec", and "MB" into "B", and
//     then prints values with SI prefixes (Binary ones for "B"). So
//     latencies are written in nanoseconds as "<metric>-ns" and appear as
//     e.g. "data-p99-sec" with values like "182.0µ"; the RSS is written in
//     bytes and appears as "Mi".
//   - Units must be distinct within a line and have no spaces.
//   - benchstat itself does not judge better or worse: it prints the signed
//     change and "~" when it is not significant (its own Mann–Whitney U
//     test at α = 0.05, no correction). The benchmark format's unit
//     metadata lines ("Unit frames/s better=higher") are written for every
//     metric with a direction, so tools that read them (benchfmt's
//     UnitMetadataMap.GetBetter) get the catalogue's direction; benchstat
//     parses and ignores them.
type BenchUnit struct {
	Unit  string
	Scale float64
}

// benchUnits are the catalogue's metrics whose unit the generic rule of
// BenchUnitOf would spell less well.
var benchUnits = map[string]BenchUnit{
	MetricThroughput:  {"frames/s", 1},
	MetricSourceMin:   {"slowest-source-frames/s", 1},
	MetricDataP999:    {"data-p99.9-ns", 1e3},
	MetricControlP999: {"control-p99.9-ns", 1e3},
	MetricUrgentP999:  {"urgent-p99.9-ns", 1e3},
	MetricServerCPU:   {"server-cpu-sec/Mframe", 1},
}

// BenchUnitOf returns the benchmark-format unit of a catalogue metric:
// the name with '-' for '_' and, by the catalogue's unit, "-ns" (values
// µs × 1000) for µs, "-B" (MiB × 2²⁰) for MiB, "/s" for "/s", "" for no
// unit, else "-" and the unit without spaces; a few read better spelt out
// (throughput is "frames/s", control_p999 "control-p99.9-ns").
func BenchUnitOf(metric Metric) BenchUnit {
	if u, ok := benchUnits[metric.Name]; ok {
		return u
	}
	base := strings.ReplaceAll(metric.Name, "_", "-")
	switch metric.Unit {
	case "µs":
		return BenchUnit{base + "-ns", 1e3}
	case "MiB":
		return BenchUnit{base + "-B", 1 << 20}
	case "/s":
		return BenchUnit{base + "/s", 1}
	case "":
		return BenchUnit{base, 1}
	}
	return BenchUnit{base + "-" + strings.Join(strings.Fields(metric.Unit), ""), 1}
}

// WriteBench writes m's valid runs in the Go benchmark format, for
// benchstat: file configuration lines (goos, goarch, cpu, pkg, and spec,
// kernel, cpus, placement and mode, each only if every shard agrees), unit
// metadata lines, then one line per valid run, in cell order, then repeat
// and pair:
//
//	Benchmark<Spec>/<factor>=<value>/... 1 <value> <unit> ...
//
// <Spec> is the spec's name in CamelCase (BenchName). Every line has every
// factor of the spec as a key, with the cell's value of that field
// (CellInfo.Config; for its own factor, its label when the spec gave one,
// CellInfo.Label, and its Value when Config keeps it under another field,
// as a reactor factor's command is under target), so benchstat's "-col
// /hot" compares a factor's values
// and the baseline's runs group under the baseline's values. Values are
// sanitised by BenchValue. The tool's version and commit go on a comment
// line, not a configuration line: benchstat splits results into separate
// tables by every file configuration key, so a commit key would keep an old
// and a new run from ever being compared.
func WriteBench(w io.Writer, m *Manifest) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	writeBenchConfig(p, m)
	runs := benchRuns(m)
	writeBenchUnits(p, runs)
	factors := factorNames(m)
	base := "Benchmark" + BenchName(m.Spec.Name)
	for _, r := range runs {
		writeBenchLine(p, m, base, factors, r)
	}
	return bw.Flush()
}

// printfFunc writes formatted text to the output being built.
type printfFunc func(format string, args ...any)

// writeBenchConfig writes the tool's comment line and the file
// configuration lines: the machine's, where every shard agrees, the
// package and the spec.
func writeBenchConfig(p printfFunc, m *Manifest) {
	tool := "reactorlab " + m.Tool.Version
	if m.Tool.Commit != "" {
		tool += " commit " + m.Tool.Commit
	}
	if m.Tool.Modified {
		tool += " (modified)"
	}
	p("# %s, %s, spec %s\n", oneLine(tool), oneLine(m.Tool.Go), oneLine(m.Spec.Name))
	shardValue := func(f func(ShardInfo) string) string {
		if len(m.Shards) == 0 {
			return ""
		}
		v := f(m.Shards[0])
		for _, s := range m.Shards[1:] {
			if f(s) != v {
				return ""
			}
		}
		return oneLine(v)
	}
	for _, kv := range []struct{ key, value string }{
		{"goos", shardValue(func(s ShardInfo) string { return s.Machine.OS })},
		{"goarch", shardValue(func(s ShardInfo) string { return s.Machine.Arch })},
		{"cpu", shardValue(func(s ShardInfo) string { return s.Machine.CPUModel })},
		{"pkg", BenchPackage},
		{"spec", oneLine(m.Spec.Name)},
		{"kernel", shardValue(func(s ShardInfo) string { return s.Machine.Kernel })},
		{"cpus", shardValue(func(s ShardInfo) string {
			if s.Machine.CPUs == 0 {
				return ""
			}
			return strconv.Itoa(s.Machine.CPUs)
		})},
		{"placement", shardValue(func(s ShardInfo) string { return s.Placement })},
		{"mode", shardValue(func(s ShardInfo) string { return s.Mode })},
	} {
		if kv.value != "" {
			p("%s: %s\n", kv.key, kv.value)
		}
	}
}

// writeBenchUnits writes a Unit line, with its better direction, for each
// directional catalogue metric some run has.
func writeBenchUnits(p printfFunc, runs []RunRecord) {
	used := map[string]bool{}
	for _, r := range runs {
		for name := range r.Metrics {
			used[name] = true
		}
	}
	for _, metric := range Metrics {
		if !used[metric.Name] || metric.Better == Neutral {
			continue
		}
		better := "lower"
		if metric.Better == HigherIsBetter {
			better = "higher"
		}
		p("Unit %s better=%s\n", BenchUnitOf(metric).Unit, better)
	}
}

// writeBenchLine writes run r's benchmark line: its name (base, then each
// factor's value in r's cell) and its finite catalogue metrics.
func writeBenchLine(p printfFunc, m *Manifest, base string, factors []string, r RunRecord) {
	cell, _ := m.Cell(r.Cell)
	var name strings.Builder
	name.WriteString(base)
	for i, f := range factors {
		v, ok := cell.Config[f]
		switch {
		case f == cell.Factor && cell.Label != "":
			v = cell.Label
		case f == cell.Factor && !ok:
			// A factor whose value this cell's Config keeps under
			// another field (a reactor factor's command, under target).
			v = cell.Value
		}
		v = BenchValue(v)
		if i == len(factors)-1 {
			v = noTrailingProcs(v)
		}
		fmt.Fprintf(&name, "/%s=%s", BenchValue(f), v)
	}
	p("%s 1", name.String())
	for _, metric := range Metrics {
		v, ok := r.Metrics[metric.Name]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		u := BenchUnitOf(metric)
		p(" %s %s", strconv.FormatFloat(v*u.Scale, 'g', -1, 64), u.Unit)
	}
	p("\n")
}

// benchRuns are m's valid runs in cell order, then repeat and pair.
func benchRuns(m *Manifest) []RunRecord {
	order := map[string]int{}
	for i, c := range m.Cells {
		order[c.ID] = i
	}
	var runs []RunRecord
	for _, r := range canonicalRuns(m.Runs) {
		if r.Comparable() {
			runs = append(runs, r)
		}
	}
	slices.SortStableFunc(runs, func(a, b RunRecord) int {
		return cmp.Or(cmp.Compare(order[a.Cell], order[b.Cell]), cmp.Compare(a.Repeat, b.Repeat), strings.Compare(a.Pair, b.Pair))
	})
	return runs
}

// factorNames are the spec's factors, in the order their first cells
// appear.
func factorNames(m *Manifest) []string {
	var out []string
	for _, c := range m.Cells {
		if c.Factor != "" && !slices.Contains(out, c.Factor) {
			out = append(out, c.Factor)
		}
	}
	return out
}

// BenchName is a spec name as the CamelCase base of a benchmark name:
// words of letters and digits, each capitalised, everything else dropped
// ("black-box" → "BlackBox"); "Matrix" if nothing is left.
func BenchName(spec string) string {
	var b strings.Builder
	upper := true
	for _, r := range spec {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			upper = true
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
			upper = false
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "Matrix"
	}
	return b.String()
}

// BenchValue is a factor name or value as one part of a benchmark name:
// each run of white space becomes '_', '/' (which would start a new part)
// becomes '∕' (U+2215, DIVISION SLASH), other control characters are
// dropped, and an empty value is "-". So "./server --fast" becomes
// ".∕server_--fast", "uniform:10us-90us" and "budget-input=8" stay as they
// are (the first '=' of a part separates the key).
func BenchValue(v string) string {
	var b strings.Builder
	space := false
	for _, r := range v {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case unicode.IsControl(r):
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte('_')
		}
		space = false
		if r == '/' {
			r = '∕'
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

// noTrailingProcs keeps the last part of a name from ending in '-' and
// digits, which benchstat reads as the GOMAXPROCS suffix: that '-' becomes
// '_' ("1-16" → "1_16").
func noTrailingProcs(v string) string {
	i := len(v)
	for i > 0 && v[i-1] >= '0' && v[i-1] <= '9' {
		i--
	}
	if i > 0 && i < len(v) && v[i-1] == '-' {
		return v[:i-1] + "_" + v[i:]
	}
	return v
}

// oneLine is s with line breaks as spaces, trimmed.
func oneLine(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r", " ", "\n", " ").Replace(s))
}
