//go:build linux

package slots

import "golang.org/x/sys/unix"

// PutRef stores r in the 64-bit data word of ev: the slot in ev.Fd and the
// generation in ev.Pad, bit for bit (a slot or generation of 2^31 or more is
// stored as a negative int32 and recovered unchanged by RefOf). The kernel
// returns the data word untouched with every event of the registration, so the
// event names the source incarnation it was registered for, never an fd number
// that may have been reused. Events is left alone. A nil ev is ignored.
func PutRef(ev *unix.EpollEvent, r Ref) {
	if ev == nil {
		return
	}
	ev.Fd = int32(r.Slot())
	ev.Pad = int32(r.Gen())
}

// RefOf returns the Ref stored in ev by PutRef, or 0 ("no source") for a nil
// ev. The result must still be checked with Table.Get: the source may have been
// freed after the kernel queued the event.
func RefOf(ev *unix.EpollEvent) Ref {
	if ev == nil {
		return 0
	}
	return MakeRef(uint32(ev.Fd), uint32(ev.Pad))
}
