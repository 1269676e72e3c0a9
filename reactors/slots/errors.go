package slots

import "errors"

// Sentinel errors, returned wrapped with context; test them with errors.Is.
var (
	// ErrFull means every slot of the table is occupied.
	ErrFull = errors.New("slots: table full")

	// ErrNilValue means Alloc was given a nil value; a nil pointer is how the
	// table marks a free slot, so it cannot be stored.
	ErrNilValue = errors.New("slots: nil value")
)
