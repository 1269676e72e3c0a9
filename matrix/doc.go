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
// field, the one its factor names. Parse refuses everything else, each
// error naming the line and the field: unknown or duplicate keys, bad
// values (with the accepted ones), impossible combinations (steady sources
// without a rate, reactor-only settings with a target), factors naming
// unknown fields, empty value lists, and values equal to the baseline's.
//
// Running cells, interleaving repeats, sharding and reporting are not this
// package's business; Cell.Configs hands a cell to whoever runs it.
package matrix
