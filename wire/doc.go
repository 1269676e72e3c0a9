// Package wire is the frame format shared by the reactors and the load generator:
// it encodes, validates and decodes frames, and nothing else (no I/O, no sockets).
//
// A frame is a fixed 32-byte header followed by a payload. Every integer is
// little-endian:
//
//	offset size field
//	     0    4 length    bytes after this field: 28 + payload length
//	     4    1 kind      1 DATA, 2 PING, 3 STOP, 4 STOP_ACK, 5 REJECT
//	     5    1 flags     opaque to this package
//	     6    2 reserved  written as 0, ignored when read
//	     8    8 token     connection token
//	    16    8 seq       sequence number
//	    24    8 send ns   send timestamp in nanoseconds
//	    32    … payload   length-28 bytes
//
// A whole frame is therefore length+4 bytes. The invariants every reader in this
// package enforces:
//
//   - a length below 28 or a kind outside 1..5 is malformed ([ErrMalformed]);
//   - a frame whose whole size (header included) exceeds the configured maximum
//     ([DefaultMaxFrame] unless configured) is refused with [ErrTooLarge] as soon as
//     its 32-byte header is known, before any buffer of the declared size exists;
//   - bad input is reported as an error, never as a panic.
//
// Writers ([PutHeader], [AppendFrame]) do not validate: fault injectors use them to
// build malformed or over-size frames on purpose.
//
// STOP_ACK carries a JSON [Ledger]; REJECT carries a short UTF-8 reason.
//
// Reactors parse frames in their own buffers with [ParseHeader]; clients and tools
// use the streaming [Decoder].
package wire
