// Package stats holds the statistics a run is judged by, on plain numbers
// and histograms: nothing in it records or reads a file.
//
// A percentile's confidence interval ([PercentileInterval], [Interval],
// at [Confidence] 95%) comes from the exact binomial distribution of order
// statistics, read from an HDR histogram's counts, so it merges as the
// histogram does; where samples depend on each other it is computed for
// one in k of them ([ThinnedInterval]), k given by the independence gate
// ([LagDependence], [ThinningFor], [IntervalThinning], up to
// [MaxThinning]; [ThinningUnknown] beyond).
//
// The load generator's self-check gates are tests here: the arrival
// process's fits ([FitExponential], [FitDispersion], [PeriodFit]) and the
// stationarity test of a run's latencies over its logged [Sample]s
// ([TrendOf]). The analysis compares cells with the exact two-sided
// Mann–Whitney U test ([MannWhitney]) and Holm–Bonferroni's adjustment
// ([HolmAdjust]). [BusyFull] is the busy fraction at which a side's CPUs
// count as the run's limit.
//
// Each test says whether it had enough to judge (Judged) and whether it
// failed (Fails), and words its figures with results/figure. It imports
// no other reactorlab package but results/figure.
package stats
