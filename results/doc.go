// Package results records, logs and summarises measurements.
//
// A [Recorder] holds a set of named classes ("data", "data-uncorrected",
// "control", "stop", "service/hot-0", …), each recording durations into HDR
// histograms (hdrhistogram-go) of one fixed geometry: [LowestValue] 1 ns to
// [HighestValue] 60 s, [SignificantFigures] 3 significant digits. Values
// outside that range are clamped to it and counted as clamped, never dropped.
//
// Time is cut into intervals ([DefaultInterval] 1 s unless configured),
// aligned on the end of the warm-up so that every interval is either wholly
// warm-up or wholly measured. The Recorder keeps every closed interval of
// every class (sparse, as hdrhistogram.PackedHistogram) for the interval log,
// and the measured total of a class is the lossless merge of its measured
// intervals: the interval log read back and merged gives the totals exactly.
// MergeRecorders merges recorders that cut the same intervals (a load
// generator's loops) into one, interval by interval, losslessly.
//
// [Recorder.WriteHlog] writes the HdrHistogram interval log format 1.3
// through hdrhistogram-go's log writer, one "Tag=<class>" line per class per
// interval, so the standard HdrHistogram log tools (HistogramLogProcessor,
// the online viewers) read it; [ReadHlog] reads one back. [Summarize] and
// [Recorder.Summary] give JSON-ready summaries in microseconds, and
// [WriteSpectrum] prints a wrk2-style percentile spectrum.
//
// A matrix run directory is described by its [Manifest] (the spec, the
// cells, the shards and every run with its metrics, named by the catalogue
// [Metrics]). [CellHistograms] merges the runs' interval logs per cell,
// losslessly; [Analyze] compares each cell with the baseline (ratios over
// the baseline/cell pairs, the exact two-sided Mann–Whitney U test against
// the pooled baseline runs, Holm–Bonferroni per metric); [WriteMarkdown]
// and [WriteBench] write report.md and benchstat's input; [Compare]
// compares two manifests cell by cell and [CompareRuns] two run
// directories (one spec, or a suite's), the regression gate, saying as data
// what it could not compare. results/htmlreport writes report.html; both
// reports format their figures with [FormatValue], [FormatRatio],
// [FormatRange], [FormatP] and [FormatCount], so a figure reads the same in
// each.
//
// This package imports no other reactorlab package.
package results
