package main

const footprintSynopsis = `reactorlab footprint --target DESIGN|cmd:'COMMAND' [--conns 10000] [--json FILE|-] [flags]`

const footprintDescription = `Measures a server's resident memory per idle connection. The target runs
as a process of its own (a reference reactor under this tool's serve
command, or any byte-echo server given as cmd:'COMMAND') with a descriptor
limit that fits the connections; --conns connections on loopback each send
one 64-byte frame and read its echo, then stay open and idle, and the
growth of the server's RSS (its whole process group) is divided by the
connections. A program that is missing, exits at once or does not listen
within --start-timeout is refused, with the end of its stderr. Prints one
line on stdout; --json FILE also writes the result as JSON to FILE, and
--json - writes it alone on stdout, the line then going to stderr. The
server's descriptor limit is --conns + 256; a connection not echoed is
reported with the server's descriptor count and limit, and one not echoed
within a second while that table is full ends the measurement then, naming
the full table as the likely cause. Exit 0: measured; 1: the measurement
failed (a connection refused or not echoed, --timeout passed); 2: bad
flags, or the target could not be started; 130: interrupted by SIGINT or
SIGTERM.`
