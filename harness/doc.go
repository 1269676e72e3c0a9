// Package harness measures one cell: a reference reactor or a server
// command under one load, run as a server and a load generator in the lab
// (package lab), its result written to a directory with a summary for a
// person: that is its one job.
//
// RunCell validates the cell (CellSpec.Validate: the reactor's
// configuration and the load as the serve and loadgen roles of package
// roles would check them, and the lab's spec), places it (CellSpec.Place:
// each side's CPUs, the reactor's and the load generator's loop CPUs),
// and runs it in the lab: the server is this program as the serve role
// or the target command (ShellArgv), the client this program as the
// loadgen role. From the lab's record it then reads the load generator's
// summary and the server's final statistics, holds every thread to its
// placement (CellResult.Placed), takes each pinned side's CPU busy
// fraction over the measured period and names the limit
// (CellResult.CPUBusy, CellResult.Limit), and writes the cell's files
// (CellFiles) and its summary (CellResult.WriteSummary).
//
// The front ends (`reactorlab run`, the matrix) apply the cell's rules
// from here alike: CheckCellDir, CheckCommand, SplitFault,
// DefaultLoadLoops.
package harness
