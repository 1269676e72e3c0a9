// Package figure writes the figures of every report the same way: a
// measured value to 3 significant figures with thousands separators
// ([Value]), a ratio ([Ratio]), a range ([Range]), a p-value ([PValue]),
// an exact count ([Count]), a figure with its unit ([WithUnit]), and
// [NotAvailable] where a figure does not exist.
//
// report.md, report.html, the compare table, the statistics' own words
// and the load generator's self-check all write their figures here, so a
// figure reads the same wherever it appears. It imports no other
// reactorlab package.
package figure
