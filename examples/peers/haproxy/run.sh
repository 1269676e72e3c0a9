#!/bin/sh
# run.sh CONFIG [BACKEND]: HAProxy in TCP mode on $REACTORLAB_LISTEN, in front
# of backend.c, a byte echo on a TCP loopback port the kernel picks.
#
# CONFIG is a HAProxy configuration in this directory (echo.cfg,
# long-timeouts.cfg, ...). It names its two addresses with environment
# variables, which HAProxy expands inside double quotes (configuration.txt,
# 2.3 "Environment variables"): bind "${REACTORLAB_LISTEN}" in the frontend,
# server ... "127.0.0.1:${ECHO_BACKEND_PORT}" in the backend. BACKEND is the
# built backend.c ({bin} in the .peer files); without it this script builds
# one into its temporary directory.
#
# The backend starts first, in the background; it writes the port it got
# into the temporary directory, which is removed once read. Then this shell
# execs HAProxy in the foreground (-db: no daemon, no master-worker), so
# HAProxy is the command's process and the backend its child, all in the
# caller's process group: SIGTERM to the group is HAProxy's hard stop and
# the backend's exit. The backend also exits when HAProxy dies
# (PR_SET_PDEATHSIG), and after $LIFETIME_S seconds (default 3600) it sends
# SIGTERM to HAProxy and exits.
set -u
cd "$(dirname "$0")" || exit 1
cfg=${1:-echo.cfg}
backend=${2:-}
REACTORLAB_LISTEN=${REACTORLAB_LISTEN:-127.0.0.1:7070}
export REACTORLAB_LISTEN

dir=$(mktemp -d "${TMPDIR:-/tmp}/haproxy-peer.XXXXXX") || exit 1
if [ -z "$backend" ]; then
	cc -O2 -Wall -o "$dir/backend" backend.c || { rm -rf "$dir"; exit 1; }
	backend=$dir/backend
fi
"$backend" "$dir/port" &
be=$!
i=0
while [ ! -s "$dir/port" ] && kill -0 "$be" 2>/dev/null && [ $i -lt 500 ]; do
	sleep 0.01
	i=$((i + 1))
done
ECHO_BACKEND_PORT=$(cat "$dir/port" 2>/dev/null)
rm -rf "$dir"
if [ -z "$ECHO_BACKEND_PORT" ]; then
	echo "haproxy-peer: the echo backend did not start" >&2
	kill "$be" 2>/dev/null
	exit 1
fi
export ECHO_BACKEND_PORT

echo "haproxy-peer: haproxy ($cfg) on $REACTORLAB_LISTEN, echo backend on 127.0.0.1:$ECHO_BACKEND_PORT (pid $be)" >&2
exec haproxy -db -f "$cfg"
