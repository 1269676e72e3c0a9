//go:build linux

package uring

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Reserved user_data values: the layer's own operations complete with these,
// and Reap consumes their completions without passing them on. A caller's
// user_data must be below ReservedUserData.
const (
	ReservedUserData    = ^uint64(0) - 1 // the first reserved value
	userDataWaitTimeout = ^uint64(0) - 1 // the timeout SQE Wait queues without IORING_FEAT_EXT_ARG
	userDataCloseCancel = ^uint64(0)     // the cancel-everything SQE Close submits
)

// Config is what New asks of the kernel.
type Config struct {
	// Entries is the SQ size, 1 to 32768 (the kernel rounds it up to a power
	// of two); 0 means 256.
	Entries uint32
	// CQEntries, if not 0, is the CQ size (IORING_SETUP_CQSIZE), no smaller
	// than Entries; 0 leaves the kernel's default of twice the SQ.
	CQEntries uint32
	// NoSingleIssuer leaves out IORING_SETUP_SINGLE_ISSUER and
	// IORING_SETUP_DEFER_TASKRUN, which New asks for by default and drops, with
	// the reason in Setup.Degraded, where the kernel refuses them.
	NoSingleIssuer bool
	// NoExtArg makes Wait time out with a timeout SQE even where the kernel has
	// IORING_FEAT_EXT_ARG; the fallback path, for tests.
	NoExtArg bool
}

// Setup is what the kernel granted: the ring's sizes, its setup flags and
// features, and why any flag asked for was dropped.
type Setup struct {
	SQEntries uint32   `json:"sq_entries"`
	CQEntries uint32   `json:"cq_entries"`
	FlagBits  uint32   `json:"flag_bits"`
	Flags     []string `json:"flags"`
	Features  uint32   `json:"feature_bits"`
	// Degraded lists, in order, each flag set the kernel refused and its errno.
	Degraded []string `json:"degraded,omitempty"`
}

// Stats are the ring's counters since New. They only grow.
type Stats struct {
	Enters    uint64 `json:"enters"`    // io_uring_enter calls
	Submitted uint64 `json:"submitted"` // SQEs the kernel consumed
	Reaped    uint64 `json:"reaped"`    // CQEs read, the layer's own included
	// OverflowFlushes counts the times the ring found IORING_SQ_CQ_OVERFLOW set
	// (completions waiting in the kernel's overflow list because the CQ was
	// full) and entered the kernel to flush them into the CQ.
	OverflowFlushes uint64 `json:"overflow_flushes"`
	// KernelDropped is the CQ ring's overflow counter: completions the kernel
	// could not keep at all. With IORING_FEAT_NODROP it stays 0 unless the
	// kernel ran out of memory; Wait and Reap fail with EBADR once it moves.
	KernelDropped uint32 `json:"kernel_dropped"`
	// SQDropped is the SQ ring's dropped counter: SQEs the kernel skipped as
	// invalid indices. The identity SQ array keeps it 0.
	SQDropped uint32 `json:"sq_dropped"`
	// NoBuffers counts completions with ENOBUFS: a buffer-select operation that
	// found its buffer ring empty.
	NoBuffers uint64 `json:"no_buffers"`
}

// Ring is one io_uring instance: its descriptor, its three mappings and the
// indices into them. Invariants: sqeTail - *sqHead <= sqEntries (no SQE handed
// out that the kernel has not consumed is overwritten); every CQE in
// [*cqHead, *cqTail) is unread; a pinned value stays pinned until the last
// completion of the operation holding it is reaped. A Ring belongs to the
// locked OS thread that created it (see the package comment).
type Ring struct {
	fd     int
	setup  Setup
	extArg bool

	sqMem, cqMem, sqeMem []byte
	sqHead, sqTail       *uint32
	sqFlags, sqDropped   *uint32
	sqMask, sqEntries    uint32
	sqes                 []SQE
	sqeTail              uint32 // SQEs handed out by SQE(); published to *sqTail by flush

	cqHead, cqTail, cqOverflow *uint32
	cqMask, cqEntries          uint32
	cqes                       []CQE

	waitTS  unix.Timespec // the wait's timeout; on the heap with the Ring, its address goes into waitArg
	waitArg getEventsArg

	pins     map[uint64]*pinned
	freePins []*pinned // released holders, reused so a steady stream of sends allocates nothing
	bufRings []*BufRing
	stats    Stats
	closed   bool
}

// pinned is the Go memory one or more operations with one user_data hand to the
// kernel, and how many of them are still in flight.
type pinned struct {
	p runtime.Pinner
	n int
}

// setupCall is io_uring_setup(2); tests replace it to play a kernel that
// refuses.
var setupCall = sysSetup

// setupAttempt is one set of flags New tries, and what dropping it says.
type setupAttempt struct {
	flags  uint32
	reason string
}

// New creates a ring. The calling goroutine must hold its OS thread
// (runtime.LockOSThread) for as long as it uses the ring. It asks for
// SINGLE_ISSUER and DEFER_TASKRUN unless cfg says not to, and degrades to
// SINGLE_ISSUER alone, then to no flag, when the kernel answers EINVAL,
// recording why in Setup().Degraded. Any other failure is refused as an *Error
// with a hint.
func New(cfg Config) (*Ring, error) {
	entries := cfg.Entries
	if entries == 0 {
		entries = 256
	}
	if entries > 32768 {
		return nil, fmt.Errorf("uring: Config.Entries %d: at most 32768", entries)
	}
	if cfg.CQEntries != 0 && cfg.CQEntries < entries {
		return nil, fmt.Errorf("uring: Config.CQEntries %d is smaller than Entries %d", cfg.CQEntries, entries)
	}
	var base uint32
	if cfg.CQEntries != 0 {
		base |= setupCQSize
	}
	attempts := []setupAttempt{{0, ""}}
	if !cfg.NoSingleIssuer {
		attempts = []setupAttempt{
			{setupSingleIssuer | setupDeferTaskrun, "DEFER_TASKRUN (6.1)"},
			{setupSingleIssuer, "SINGLE_ISSUER (6.0)"},
			{0, ""},
		}
	}
	var degraded []string
	var lastErr error
	for i, a := range attempts {
		p := params{flags: base | a.flags, cqEntries: cfg.CQEntries}
		fd, errno := setupCall(entries, &p)
		if errno == 0 {
			r, err := mapRing(fd, &p, cfg)
			if err != nil {
				return nil, err
			}
			r.setup.Degraded = degraded
			return r, nil
		}
		if errno == unix.EINVAL && i+1 < len(attempts) {
			degraded = append(degraded, fmt.Sprintf("%s refused (%s): kernel too old for it, asking without", a.reason, errnoName(errno)))
			continue
		}
		detail := fmt.Sprintf("entries=%d cq_entries=%d flags=%s", entries, cfg.CQEntries, strings.Join(flagNames(p.flags), "|"))
		if len(degraded) > 0 {
			detail += "; before it " + strings.Join(degraded, "; ")
		}
		lastErr = &Error{Op: "io_uring_setup", Detail: detail, Errno: errno, Hint: setupHint(errno)}
		break
	}
	return nil, lastErr
}

// mapRing maps the rings of a new ring descriptor; on failure it closes fd.
func mapRing(fd int, p *params, cfg Config) (*Ring, error) {
	r := &Ring{fd: fd, pins: map[uint64]*pinned{}}
	r.setup = Setup{SQEntries: p.sqEntries, CQEntries: p.cqEntries, FlagBits: p.flags, Flags: flagNames(p.flags), Features: p.features}
	r.extArg = p.features&FeatExtArg != 0 && !cfg.NoExtArg
	fail := func(what string, off int64, size int, err error) (*Ring, error) {
		r.unmap()
		unix.Close(fd)
		errno, _ := err.(unix.Errno)
		return nil, &Error{Op: "mmap", Detail: fmt.Sprintf("%s offset=%#x size=%d", what, off, size), Errno: errno, Hint: "the kernel refused to map the ring: address space or memory exhausted"}
	}
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*sizeofCQE)
	single := p.features&FeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.sqMem, err = unix.Mmap(fd, offSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fail("SQ ring", offSQRing, sqSize, err)
	}
	if single {
		r.cqMem = r.sqMem
	} else if r.cqMem, err = unix.Mmap(fd, offCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fail("CQ ring", offCQRing, cqSize, err)
	}
	sqeSize := int(p.sqEntries * sizeofSQE)
	if r.sqeMem, err = unix.Mmap(fd, offSQEs, sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		return fail("SQE array", offSQEs, sqeSize, err)
	}
	u32 := func(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead = u32(r.sqMem, p.sqOff.head)
	r.sqTail = u32(r.sqMem, p.sqOff.tail)
	r.sqFlags = u32(r.sqMem, p.sqOff.flags)
	r.sqDropped = u32(r.sqMem, p.sqOff.dropped)
	r.sqMask = *u32(r.sqMem, p.sqOff.ringMask)
	r.sqEntries = *u32(r.sqMem, p.sqOff.ringEntries)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), r.sqEntries)
	// The SQ array maps ring slots to SQE indices; the identity mapping, as
	// liburing sets it, lets slot i always name SQE i.
	array := unsafe.Slice(u32(r.sqMem, p.sqOff.array), r.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.sqeTail = atomic.LoadUint32(r.sqTail)
	r.cqHead = u32(r.cqMem, p.cqOff.head)
	r.cqTail = u32(r.cqMem, p.cqOff.tail)
	r.cqOverflow = u32(r.cqMem, p.cqOff.overflow)
	r.cqMask = *u32(r.cqMem, p.cqOff.ringMask)
	r.cqEntries = *u32(r.cqMem, p.cqOff.ringEntries)
	r.cqes = unsafe.Slice((*CQE)(unsafe.Pointer(&r.cqMem[p.cqOff.cqes])), r.cqEntries)
	r.waitArg.ts = uint64(uintptr(unsafe.Pointer(&r.waitTS)))
	return r, nil
}

// Setup returns what the kernel granted at New.
func (r *Ring) Setup() Setup { return r.setup }

// Stats returns the ring's counters.
func (r *Ring) Stats() Stats {
	s := r.stats
	if !r.closed {
		s.KernelDropped = atomic.LoadUint32(r.cqOverflow)
		s.SQDropped = atomic.LoadUint32(r.sqDropped)
	}
	return s
}

// FD is the ring's descriptor, for the designs' descriptor accounting.
func (r *Ring) FD() int { return r.fd }

// SQE returns the next free submission entry, zeroed. When the SQ is full it
// submits what is queued first; it fails only if the kernel consumes nothing.
// The entry is the caller's to fill until the next Submit, Wait or SQE call
// that finds the SQ full.
func (r *Ring) SQE() (*SQE, error) {
	if r.closed {
		return nil, errors.New("uring: SQE on a closed ring")
	}
	// Load-acquire of the head: the kernel has finished reading every slot
	// before it, so those slots may be rewritten.
	if r.sqeTail-atomic.LoadUint32(r.sqHead) >= r.sqEntries {
		if _, err := r.Submit(); err != nil {
			return nil, err
		}
		if r.sqeTail-atomic.LoadUint32(r.sqHead) >= r.sqEntries {
			return nil, &Error{Op: "io_uring_enter", Detail: fmt.Sprintf("submit of a full SQ (%d entries)", r.sqEntries), Errno: unix.EBUSY, Hint: "the kernel consumed no SQE: reap completions, then submit again"}
		}
	}
	sqe := &r.sqes[r.sqeTail&r.sqMask]
	*sqe = SQE{}
	r.sqeTail++
	return sqe, nil
}

// flush publishes the SQEs handed out and returns how many the kernel has not
// consumed yet.
func (r *Ring) flush() uint32 {
	// Store-release of the tail: the SQE contents written above are visible to
	// the kernel before the tail that covers them.
	atomic.StoreUint32(r.sqTail, r.sqeTail)
	return r.sqeTail - atomic.LoadUint32(r.sqHead)
}

// Submit hands every queued SQE to the kernel and, without waiting, lets it post
// completions that are ready (with DEFER_TASKRUN they are posted only when the
// ring's thread enters with GETEVENTS) and flush an overflowed CQ. It returns
// the number of SQEs the kernel consumed.
func (r *Ring) Submit() (int, error) {
	return r.enter(0, -1)
}

// Wait submits what is queued and blocks until at least min completions are
// ready to reap or timeout passes (timeout < 0: no bound). It returns the number
// ready; a timeout is not an error. Without IORING_FEAT_EXT_ARG (or with
// Config.NoExtArg) the bound is a timeout SQE with a reserved user_data, whose
// completion Reap consumes; one queued by a wait that ended early fires later
// and wakes at most one later wait early. The count returned leaves out the
// layer's own completions.
func (r *Ring) Wait(min int, timeout time.Duration) (int, error) {
	if min < 0 || min > int(r.cqEntries) {
		return 0, fmt.Errorf("uring: Wait min=%d: want 0 to the CQ size %d", min, r.cqEntries)
	}
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		left := time.Duration(-1)
		if timeout >= 0 {
			if left = time.Until(deadline); left < 0 {
				left = 0
			}
		}
		_, err := r.enter(uint32(min), left)
		ready := r.Ready()
		if !r.extArg {
			ready = r.readyForCaller()
		}
		switch {
		case err == nil:
			if ready >= min || timeout >= 0 && !time.Now().Before(deadline) {
				return ready, nil
			}
		case errors.Is(err, unix.ETIME):
			return ready, nil
		case errors.Is(err, unix.EINTR):
			// A signal (the Go runtime preempts threads with SIGURG) ended
			// the wait early: wait again for what is left.
			if timeout >= 0 && !time.Now().Before(deadline) {
				return ready, nil
			}
		default:
			return ready, err
		}
		if ready >= min {
			return ready, nil
		}
	}
}

// enter publishes the SQ and calls io_uring_enter once, always with GETEVENTS
// (min 0 returns at once), so that deferred task work runs and an overflowed CQ
// is flushed. wait < 0 means no timeout.
func (r *Ring) enter(min uint32, wait time.Duration) (int, error) {
	if r.closed {
		return 0, errors.New("uring: enter on a closed ring")
	}
	flags := uint32(enterGetEvents)
	var arg unsafe.Pointer
	var argSize uintptr
	if min > 0 && wait >= 0 {
		if r.extArg {
			r.waitTS = unix.NsecToTimespec(int64(wait))
			flags |= enterExtArg
			arg, argSize = unsafe.Pointer(&r.waitArg), unsafe.Sizeof(r.waitArg)
		} else if err := r.queueWaitTimeout(wait); err != nil {
			return 0, err
		}
	}
	if atomic.LoadUint32(r.sqFlags)&sqCQOverflow != 0 {
		r.stats.OverflowFlushes++
	}
	toSubmit := r.flush()
	r.stats.Enters++
	n, errno := sysEnter(r.fd, toSubmit, min, flags, arg, argSize)
	if errno != 0 {
		if min > 0 && (errno == unix.ETIME || errno == unix.EINTR) {
			// A wait's ordinary ends, which Wait (the only caller waiting)
			// takes as such: the bare errno, so a wait that times out
			// allocates nothing.
			return 0, errno
		}
		return 0, r.enterError(errno, toSubmit, min)
	}
	r.stats.Submitted += uint64(n)
	return n, nil
}

// queueWaitTimeout queues the timeout SQE that bounds a wait on kernels without
// IORING_FEAT_EXT_ARG. The kernel copies the timespec when it consumes the
// SQE, within the enter that follows; it stays pinned until the completion.
func (r *Ring) queueWaitTimeout(wait time.Duration) error {
	_, err := r.Timeout(wait, 0, userDataWaitTimeout)
	return err
}

func (r *Ring) enterError(errno unix.Errno, toSubmit, min uint32) error {
	e := &Error{Op: "io_uring_enter", Detail: fmt.Sprintf("to_submit=%d min_complete=%d", toSubmit, min), Errno: errno}
	switch errno {
	case unix.EEXIST:
		e.Hint = "the ring was created with SINGLE_ISSUER by another OS thread: call runtime.LockOSThread before New and use the ring only from that goroutine"
	case unix.EBADR:
		e.Hint = fmt.Sprintf("the kernel dropped %d completions (CQ overflow without memory to keep them): the ring's results are incomplete", atomic.LoadUint32(r.cqOverflow))
	case unix.EBUSY:
		e.Hint = "the CQ is full and its overflow cannot be flushed: reap completions, then enter again"
	}
	return e
}

// Ready is the number of completions in the CQ not yet reaped, the layer's own
// included; Reap passes on all but those.
func (r *Ring) Ready() int {
	if r.closed {
		return 0
	}
	// Load-acquire of the tail: the CQEs before it are fully written.
	return int(atomic.LoadUint32(r.cqTail) - atomic.LoadUint32(r.cqHead))
}

// readyForCaller is Ready less the layer's own completions waiting in the CQ
// (the fallback wait's timeouts), which Reap never passes on.
func (r *Ring) readyForCaller() int {
	if r.closed {
		return 0
	}
	n := 0
	for head, tail := atomic.LoadUint32(r.cqHead), atomic.LoadUint32(r.cqTail); head != tail; head++ {
		if r.cqes[head&r.cqMask].UserData < ReservedUserData {
			n++
		}
	}
	return n
}

// Reap passes every ready completion to fn, in the order the kernel posted
// them, and returns how many it passed. It consumes the completions of the
// layer's own operations (reserved user_data) without passing them, and
// releases an operation's pinned memory at its last completion. When the CQ is
// drained and the kernel holds overflowed completions (IORING_SQ_CQ_OVERFLOW),
// it enters to flush them and reaps those too, so no completion is left
// behind; each flush is counted in Stats.OverflowFlushes. fn may prepare and
// submit SQEs, and may call Reap itself.
func (r *Ring) Reap(fn func(CQE)) (int, error) {
	if r.closed {
		return 0, errors.New("uring: Reap on a closed ring")
	}
	passed := 0
	for {
		head := atomic.LoadUint32(r.cqHead)
		tail := atomic.LoadUint32(r.cqTail)
		for ; head != tail; head++ {
			c := r.cqes[head&r.cqMask]
			// Store-release of the head, per CQE: the slot is copied before
			// the kernel may reuse it, and a nested Reap starts after it.
			atomic.StoreUint32(r.cqHead, head+1)
			r.stats.Reaped++
			if c.Res == -int32(unix.ENOBUFS) {
				r.stats.NoBuffers++
			}
			if !c.More() {
				r.unpin(c.UserData)
			}
			if c.UserData >= ReservedUserData {
				continue
			}
			passed++
			fn(c)
		}
		if r.Ready() > 0 {
			continue
		}
		if atomic.LoadUint32(r.sqFlags)&sqCQOverflow == 0 {
			if d := atomic.LoadUint32(r.cqOverflow); d != 0 {
				return passed, r.enterError(unix.EBADR, 0, 0)
			}
			return passed, nil
		}
		if _, err := r.enter(0, -1); err != nil {
			return passed, err
		}
		if r.Ready() == 0 && atomic.LoadUint32(r.sqFlags)&sqCQOverflow != 0 {
			return passed, &Error{Op: "io_uring_enter", Detail: "flush of an overflowed CQ", Errno: unix.EBUSY, Hint: "the kernel flushed nothing into an empty CQ"}
		}
	}
}

// pin keeps the Go value holding ptr in place and alive until the last
// completion with userData is reaped.
func (r *Ring) pin(userData uint64, ptr any) {
	p := r.pins[userData]
	if p == nil {
		if k := len(r.freePins); k > 0 {
			p = r.freePins[k-1]
			r.freePins = r.freePins[:k-1]
		} else {
			p = &pinned{}
		}
		r.pins[userData] = p
	}
	p.p.Pin(ptr)
	p.n++
}

// unpin releases one operation's hold on the values pinned under userData.
func (r *Ring) unpin(userData uint64) {
	p := r.pins[userData]
	if p == nil {
		return
	}
	if p.n--; p.n == 0 {
		p.p.Unpin()
		delete(r.pins, userData)
		if len(r.freePins) < 64 {
			r.freePins = append(r.freePins, p)
		}
	}
}

// Pinned is the number of user_data values whose operations still hold pinned
// Go memory.
func (r *Ring) Pinned() int { return len(r.pins) }

// Close ends the ring: it cancels every operation in flight and reaps until the
// cancellation completes (at most one second), closes the ring descriptor,
// unmaps the buffer rings and the rings, and releases the pinned memory. The
// completions reaped here are discarded. Close on a closed ring does nothing.
func (r *Ring) Close() error {
	if r.closed {
		return nil
	}
	var firstErr error
	if sqe, err := r.SQE(); err == nil {
		sqe.Opcode = opAsyncCancel
		sqe.Fd = -1
		sqe.OpFlags = cancelAny | cancelAll
		sqe.UserData = userDataCloseCancel
		deadline := time.Now().Add(time.Second)
		done := false
		for !done && time.Now().Before(deadline) {
			if _, err := r.Wait(1, 100*time.Millisecond); err != nil {
				firstErr = err
				break
			}
			for head, tail := atomic.LoadUint32(r.cqHead), atomic.LoadUint32(r.cqTail); head != tail; head++ {
				if c := r.cqes[head&r.cqMask]; c.UserData == userDataCloseCancel {
					done = true
				}
			}
			if _, err := r.Reap(func(CQE) {}); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	r.stats.KernelDropped = atomic.LoadUint32(r.cqOverflow)
	r.stats.SQDropped = atomic.LoadUint32(r.sqDropped)
	r.closed = true
	if err := unix.Close(r.fd); err != nil && firstErr == nil {
		firstErr = &Error{Op: "close", Detail: fmt.Sprintf("ring fd=%d", r.fd), Errno: err.(unix.Errno)}
	}
	for _, b := range r.bufRings {
		b.unmap()
	}
	r.bufRings = nil
	r.unmap()
	for k, p := range r.pins {
		p.p.Unpin()
		delete(r.pins, k)
	}
	return firstErr
}

func (r *Ring) unmap() {
	if r.sqeMem != nil {
		unix.Munmap(r.sqeMem)
	}
	if r.cqMem != nil && (r.sqMem == nil || &r.cqMem[0] != &r.sqMem[0]) {
		unix.Munmap(r.cqMem)
	}
	if r.sqMem != nil {
		unix.Munmap(r.sqMem)
	}
	r.sqMem, r.cqMem, r.sqeMem, r.sqes, r.cqes = nil, nil, nil, nil, nil
}
