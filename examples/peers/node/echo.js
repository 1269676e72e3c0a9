'use strict';
// Byte echo on Node.js `net` (libuv underneath), in the idiom of Node's own
// docs: net.createServer((socket) => { socket.pipe(socket); }) (the echo
// server in https://nodejs.org/api/net.html#netcreateserveroptions-connectionlistener).
//
// Correct, because stream.pipe() does what an echo needs:
// - backpressure: when socket.write() returns false (more than
//   writableHighWaterMark, 16 KiB, queued), pipe pauses the source (libuv
//   uv_read_stop: the kernel buffers fill and the client's writes block) and
//   resumes it on 'drain' (https://nodejs.org/api/stream.html#readablepipedestination-options);
// - half-close: at the source's 'end' pipe calls end() on the destination,
//   which flushes every queued write before the FIN (pipe's `end` option,
//   default true; allowHalfOpen: false does the same).
// An 'error' handler on every socket (ECONNRESET, EPIPE: the socket is then
// destroyed and its descriptor closed) and on the server; without one an
// 'error' event throws and kills the process.
//
// Listens on $REACTORLAB_LISTEN (host:port), else argv[2]; lifetime in
// seconds from $LIFETIME_S, else argv[3], else 3600. Exits 0 on SIGTERM/SIGINT.
const net = require('node:net');

const addr = process.env.REACTORLAB_LISTEN || process.argv[2] || '127.0.0.1:7070';
const lifetime = Number(process.env.LIFETIME_S || process.argv[3] || 3600);
const colon = addr.lastIndexOf(':');
const host = addr.slice(0, colon).replace(/^\[|\]$/g, '');
const port = Number(addr.slice(colon + 1));

const sockets = new Set();
const server = net.createServer((socket) => {
  sockets.add(socket);
  socket.on('error', () => {}); // the socket is destroyed; 'close' follows
  socket.on('close', () => sockets.delete(socket));
  socket.pipe(socket);
});
server.on('error', (err) => console.error(`echo.js: server: ${err.message}`));
server.listen(port, host, () => console.error(`echo.js: listening on ${addr} (node ${process.version})`));

function stop() {
  server.close();
  for (const s of sockets) s.destroy();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
setTimeout(stop, lifetime * 1000).unref();
