// Package record records latencies into HDR histograms, cut into
// intervals, and writes and reads them as interval logs.
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
// intervals: the interval log read back and merged gives the totals exactly
// ([MeasuredHistograms]). [MergeRecorders] merges recorders that cut the
// same intervals (a load generator's loops) into one, interval by interval,
// losslessly.
//
// [Recorder.WriteHlog] writes the HdrHistogram interval log format 1.3
// through hdrhistogram-go's log writer, one "Tag=<class>" line per class per
// interval, so the standard HdrHistogram log tools (HistogramLogProcessor,
// the online viewers) read it; [ReadHlog] reads one back. [Summarize] and
// [Recorder.Summary] give JSON-ready summaries in microseconds, with each
// percentile's confidence interval (results/stats), and [WriteSpectrum]
// prints a wrk2-style percentile spectrum. A [SampleLog] keeps runs of
// consecutive samples spread over a recording of unknown length, in
// bounded memory, for the tests of consecutive samples.
//
// It imports no other reactorlab package but results/stats and
// results/figure.
package record
