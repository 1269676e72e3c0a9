'use strict';
// BUGGY byte echo on Node.js `net`: echo.js with socket.pipe(socket) replaced
// by the idiom countless examples use,
//     socket.on('data', (d) => socket.write(d));
// which ignores write()'s return value. write() never refuses data: when it
// returns false the chunk is still queued in user space ("the data will be
// buffered in memory", https://nodejs.org/api/stream.html#writablewritechunk-encoding-callback,
// and the "Buffering" section: "it is possible for memory usage to grow
// without bound"), and nothing pauses the socket's reading. A client that
// writes without reading is read as fast as it sends, its echoes pile up in
// the process: fails W1. Everything else is as echo.js (half-close still
// works: with allowHalfOpen false Node end()s the socket at 'end', after the
// queued writes).
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
  socket.on('data', (d) => socket.write(d)); // BUG: write()'s false is ignored
});
server.on('error', (err) => console.error(`write-ignores-backpressure.js: server: ${err.message}`));
server.listen(port, host, () => console.error(`write-ignores-backpressure.js: listening on ${addr} (node ${process.version})`));

function stop() {
  server.close();
  for (const s of sockets) s.destroy();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
setTimeout(stop, lifetime * 1000).unref();
