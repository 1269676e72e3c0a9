// Package matrix has one job: one-factor-at-a-time experiment specs. It
// parses a YAML spec, validates it, and expands it into cells.
//
// A spec names a baseline cell (a reference reactor or a black-box target,
// its load, its reactor settings, faults and timing) and a list of factors,
// each naming one baseline field and the alternative values to try:
//
//	name: callback-cost
//	repeats: 3
//	baseline:
//	  reactor: lt
//	  hot: 4
//	  inflight: 16
//	  control_every: 1ms
//	  callback: "0"
//	  duration: 5s
//	  warmup: 1s
//	factors:
//	  - name: callback
//	    values: [50us, "uniform:10us-90us"]
//
// Expansion gives the baseline first, then one cell per factor value in
// the order written; every cell differs from the baseline in exactly one
// field, the one its factor names. A cell is named "factor=value" in every
// report, or "factor=label" for a black-box value written
// {cmd: '...', label: NAME} (Cell.ID). Parse refuses everything else, each
// error naming the line and the field, every error it can find at once
// (Errors): unknown or duplicate keys, bad
// values (with the accepted ones), impossible combinations (steady sources
// without a rate, reactor-only settings with a target), factors naming
// unknown fields, empty value lists, values equal to the baseline's, and
// every value the server or the load generator would refuse at the start
// of a run (with their message). YAML syntax errors name the line counted
// from 1, as the others do (an unclosed '{' its own line). A black-box
// target's program that is not there (a path, or a name not on $PATH; a
// compound shell command is the shell's) is refused by CheckTargets at the
// line and field that name it, and one that cannot be started (it exits,
// listens elsewhere or never listens) by CheckStarts, which starts each
// distinct command once, as the conformance suite checks a target.
//
// A file may hold several specs as YAML documents: ParseSuite reads them
// all; the built-in suites (EmbeddedSuites: quick, design-notes, priority,
// peers, peers-capacity, scaling, nightly) are such files. A suite whose
// cells need more CPUs than this process may use (scaling needs 8) is
// refused by Check before anything runs, naming the cell.
//
// Beyond the spec, this package runs it (cmd → matrix → harness):
//
//   - Spec.Plan orders the runs in pairs, a baseline run and then a factor
//     cell's run, for each repeat of each cell (A B A C … A B A C …), so the
//     machine's drift cancels in each pair's ratio; a Shard takes a
//     deterministic share of the factor cells, each with its own baseline
//     runs, and the shards of one split together make the unsharded plan.
//   - Run executes a plan through harness.RunCell into a run directory
//     (results.Manifest, one directory per run with its HDR interval log),
//     rewriting the manifest after every run, so an interrupted matrix
//     leaves a readable directory. Before anything is written, every
//     planned cell is checked as the harness will check it (Check), and
//     the directory is locked against a second matrix. The manifest's
//     shard records the placement as asked and as resolved here
//     (harness.CellSpec.Place: counts and defaults made CPU lists, the
//     load generator's loops counted, each default's rule named), and
//     each cell placed otherwise than the baseline (results.Resolved).
//   - Options.Resume continues an interrupted run in its directory: the
//     same spec, shard, placement (as asked, and as resolved when the
//     manifest recorded it) and build (CheckResume), its runs kept
//     but the one the interruption cut short and the other half of that
//     one's pair, the rest of the plan run, and the manifest's shard
//     saying when it was resumed and what it kept (results.Resume).
//   - Estimate is the expected wall time of a plan, calibrated against
//     measured suites.
//   - Merge joins the directories of the shards of one split, copying
//     every run unchanged: the result equals an unsharded run.
//   - Render writes the reports (results and results/htmlreport).
package matrix
