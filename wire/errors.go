package wire

import "errors"

// Sentinel errors. Functions in this package return them either bare or wrapped
// with context (the offending field and value), so test them with errors.Is.
var (
	// ErrShortHeader means fewer than HeaderSize bytes were given to ParseHeader.
	// It is returned bare (never wrapped) so that probing a partial buffer does
	// not allocate.
	ErrShortHeader = errors.New("wire: short header")

	// ErrMalformed means a frame or a payload breaks the format: a length field
	// below 28, an unknown kind, or a STOP_ACK ledger that is not valid.
	ErrMalformed = errors.New("wire: malformed frame")

	// ErrTooLarge means a header declares a whole frame larger than the limit.
	ErrTooLarge = errors.New("wire: frame too large")
)
