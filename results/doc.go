// Package results holds a matrix run directory's results: its manifest,
// the metric catalogue, the analysis, report.md, bench.txt and the
// comparison of two runs.
//
// A matrix run directory is described by its [Manifest] (the spec, the
// cells, the shards and every run with its metrics). A metric is one
// entry of the catalogue [Metrics]: its name, unit and description for
// the reports, when a run has no value of it, and the function that
// computes it from a cell's result (harness.CellResult) and interval log;
// [ComputeMetrics] computes them all for one run, so a metric the reports
// describe is one every run computes. [CellHistograms] merges the runs' interval logs per cell,
// losslessly (results/record); [Analyze] compares each cell with the
// baseline (ratios over the baseline/cell pairs, the exact two-sided
// Mann–Whitney U test against the pooled baseline runs, Holm–Bonferroni
// per metric, from results/stats); [WriteMarkdown] and [WriteBench] write
// report.md and benchstat's input; [Compare] compares two manifests cell
// by cell and [CompareRuns] two run directories (one spec, or a suite's),
// the regression gate, saying as data what it could not compare.
// results/htmlreport writes report.html; both reports write their figures
// with results/figure, so a figure reads the same in each.
//
// Recording (results/record) and the statistics (results/stats) sit below
// it and never import it; it sits above the lab (harness), whose results
// its catalogue computes from.
package results
