// Package harness measures one cell: a reference reactor or a server
// command under the load generator's load, run as a pair in the lab
// (package lab), with its files, its summary, its CPU busy figures and
// its placement checked thread by thread.
package harness
