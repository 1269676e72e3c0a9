// Package footprint measures what idle connections cost a server: the
// growth of its resident memory once N connections have each echoed one
// frame and gone quiet, divided by N. It drives any conformance target
// that runs as a process of its own (a reference reactor under `reactorlab
// serve`, or a black-box command), so reference reactors and third-party
// servers are measured by the same client in the same way. A connection
// that is not echoed is reported with the server's descriptor table (its
// count and RLIMIT_NOFILE, from /proc), and named as the likely cause
// only when that table is full while a connection waits for its echo.
package footprint
