package stats

// BusyFull is the mean busy fraction of a side's CPUs over the measured
// period at which that side is taken for the limit of a run (the kernel
// left it less than a tenth of its CPUs); harness.CellResult.Limit uses
// it.
const BusyFull = 0.9
