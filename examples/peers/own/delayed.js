#!/usr/bin/env node
// delayed.js: a TCP byte-echo server on Node's `net` module that holds every
// chunk it reads for a random 0-3 ms before writing it back.
//
// Order: each connection keeps a FIFO of chunks, each with a due time that is
// never earlier than the previous chunk's (due = max(previous due, now + a
// random 0-3 ms)), and a single timer for the head of the FIFO; so the delays
// are random but the echo stays in order.
//
// Backpressure: what a connection owes (bytes in its FIFO plus bytes queued in
// the socket's writable buffer) is bounded: above HIGH_WATER the socket is
// paused (not read); it is resumed when the debt falls to LOW_WATER, checked
// on every flush of the FIFO and on 'drain'.
//
// Half-close: the server allows half-open connections; on 'end' it finishes
// the FIFO and then ends its side (FIN after all writes).
// Reset: 'error' destroys the socket at once, dropping its FIFO and timer.
//
// EMFILE: libuv sheds connections it cannot take (reserve-descriptor trick);
// if accept errors still reach us, the server is closed and listens again
// after an exponential backoff, so no error loop can spin.
//
// Address: $REACTORLAB_LISTEN, else argv[2]. Lifetime: argv[3] or
// $OWN_LIFETIME seconds (default 3600). SIGTERM/SIGINT/lifetime: exit 0.
'use strict';

const net = require('net');

const HIGH_WATER = 1 << 20;
const LOW_WATER = 256 << 10;
const MAX_DELAY_MS = 3;
const BACKOFF_MIN_MS = 10;
const BACKOFF_MAX_MS = 1000;
// Bookkeeping charged per held chunk or pending write, so that many tiny
// chunks cannot hide a large memory cost behind a small byte count.
const OVERHEAD = 256;

function now() {
  return performance.now();
}

function serve(socket) {
  socket.setNoDelay(true);
  const fifo = []; // {chunk, due}
  let head = 0; // index of the first live entry in fifo
  let queued = 0; // cost of the fifo: bytes plus OVERHEAD per chunk
  let writes = 0; // writes handed to the socket and not yet completed
  let lastDue = 0;
  let timer = null;
  let paused = false;
  let ended = false; // peer half-closed
  let done = false; // our side ended or the socket is gone

  function debt() {
    return queued + socket.writableLength + writes * OVERHEAD;
  }

  function maybeResume() {
    if (paused && !done && debt() <= LOW_WATER) {
      paused = false;
      socket.resume();
    }
  }

  function schedule() {
    if (timer !== null || head >= fifo.length || done) return;
    const wait = Math.max(0, fifo[head].due - now());
    timer = setTimeout(flush, Math.ceil(wait));
  }

  function flush() {
    timer = null;
    if (done) return;
    const t = now() + 0.5; // timers have millisecond resolution
    const due = [];
    while (head < fifo.length && fifo[head].due <= t) {
      const { chunk } = fifo[head];
      fifo[head] = undefined;
      head++;
      queued -= chunk.length + OVERHEAD;
      due.push(chunk);
    }
    if (due.length > 0) {
      // One write per turn, whatever the number of chunks that fell due.
      writes++;
      socket.write(due.length === 1 ? due[0] : Buffer.concat(due), afterWrite);
      if (done) return; // the write may have failed synchronously
    }
    if (head >= fifo.length) {
      fifo.length = 0;
      head = 0;
    } else if (head > 1024 && head * 2 > fifo.length) {
      fifo.splice(0, head);
      head = 0;
    }
    if (head >= fifo.length && ended) {
      done = true;
      socket.end(); // FIN after everything written
      return;
    }
    maybeResume();
    schedule();
  }

  function afterWrite() {
    writes--;
    maybeResume();
  }

  socket.on('data', (chunk) => {
    const due = Math.max(lastDue, now() + Math.random() * MAX_DELAY_MS);
    lastDue = due;
    fifo.push({ chunk, due });
    queued += chunk.length + OVERHEAD;
    if (!paused && debt() > HIGH_WATER) {
      paused = true;
      socket.pause();
    }
    schedule();
  });

  socket.on('drain', maybeResume);

  socket.on('end', () => {
    ended = true;
    if (head >= fifo.length && timer === null && !done) {
      done = true;
      socket.end();
    }
  });

  function release() {
    done = true;
    if (timer !== null) {
      clearTimeout(timer);
      timer = null;
    }
    fifo.length = 0;
    head = 0;
    queued = 0;
  }

  socket.on('error', () => {
    // ECONNRESET, EPIPE, ...: release the descriptor now.
    release();
    socket.destroy();
  });
  socket.on('close', release);
}

function parseAddr(addr) {
  const i = addr.lastIndexOf(':');
  if (i < 0) throw new Error(`address ${JSON.stringify(addr)} must be host:port`);
  let host = addr.slice(0, i);
  const port = Number(addr.slice(i + 1));
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`bad port in ${addr}`);
  return host ? { host, port } : { port };
}

function main() {
  const addr = process.env.REACTORLAB_LISTEN || process.argv[2];
  if (!addr) {
    console.error('usage: delayed.js host:port [lifetime-seconds] (or $REACTORLAB_LISTEN)');
    process.exit(2);
  }
  const lt = Number(process.argv[3] || process.env.OWN_LIFETIME || 3600);
  const lifetimeMs = (lt > 0 ? lt : 3600) * 1000;
  const where = parseAddr(addr);

  process.on('SIGTERM', () => process.exit(0));
  process.on('SIGINT', () => process.exit(0));
  setTimeout(() => process.exit(0), lifetimeMs).unref();

  let backoff = 0;
  let announced = false;

  function start() {
    const server = net.createServer({ allowHalfOpen: true, pauseOnConnect: false }, serve);
    server.on('connection', () => {
      backoff = 0;
    });
    server.on('error', (err) => {
      if (!server.listening && !announced) {
        console.error(`own-delayed: listen ${addr}: ${err.message}`);
        process.exit(1);
      }
      // An accept error (EMFILE, ENFILE, ...): stop accepting for a while.
      backoff = Math.min(BACKOFF_MAX_MS, backoff ? backoff * 2 : BACKOFF_MIN_MS);
      if (server.listening) {
        console.error(`own-delayed: accept: ${err.code || err.message}; retrying in ${backoff} ms`);
        server.close();
        setTimeout(start, backoff);
      } else {
        // Listening again failed (e.g. no descriptor for the socket yet).
        setTimeout(start, backoff);
      }
    });
    server.listen({ ...where, backlog: 4096 }, () => {
      if (!announced) {
        announced = true;
        const a = server.address();
        where.port = a.port; // listen again on this very port after a backoff
        const shown = a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
        console.error(`own-delayed: listening on ${shown}`);
      }
    });
  }
  start();
}

main();
