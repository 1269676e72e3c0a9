//go:build linux

package uring

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BufRing is a provided buffer ring (IORING_REGISTER_PBUF_RING): count buffers
// of size bytes the kernel picks from for buffer-select receives, in buffer
// group group. Both the ring of entries and the buffers are anonymous mmap'd
// memory: the kernel writes into them at any time, so they must be memory the
// Go runtime never moves or frees.
//
// Invariant: every buffer id is either published in the ring (the kernel may
// select it) or held by the caller since a completion named it (CQE.BufferID);
// Recycle moves it back. A buffer is never in the ring twice, so the ring of
// count entries never overfills.
type BufRing struct {
	ring     *Ring
	group    uint16
	count    uint32
	size     int
	entries  []byte // count struct io_uring_buf; the tail overlays bufs[0].resv
	data     []byte // count buffers of size bytes
	tail     uint16 // entries added, published or not
	recycled uint64
}

// NewBufRing maps count buffers of size bytes (count a power of two, at most
// 32768), publishes them all, and registers them as buffer group group.
func (r *Ring) NewBufRing(group uint16, count int, size int) (*BufRing, error) {
	if count <= 0 || count > maxBufRingEntries || count&(count-1) != 0 {
		return nil, fmt.Errorf("uring: buffer ring count %d: want a power of two from 1 to %d", count, maxBufRingEntries)
	}
	if size <= 0 || size > 1<<30 {
		return nil, fmt.Errorf("uring: buffer ring size %d: want 1 byte to 1 GiB", size)
	}
	for _, b := range r.bufRings {
		if b.group == group {
			return nil, fmt.Errorf("uring: buffer group %d is already registered on this ring", group)
		}
	}
	b := &BufRing{ring: r, group: group, count: uint32(count), size: size}
	var err error
	anon := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_POPULATE
	if b.entries, err = unix.Mmap(-1, 0, count*sizeofBufRingEntry, unix.PROT_READ|unix.PROT_WRITE, anon); err != nil {
		return nil, &Error{Op: "mmap", Detail: fmt.Sprintf("buffer ring entries count=%d", count), Errno: err.(unix.Errno)}
	}
	if b.data, err = unix.Mmap(-1, 0, count*size, unix.PROT_READ|unix.PROT_WRITE, anon); err != nil {
		b.unmap()
		return nil, &Error{Op: "mmap", Detail: fmt.Sprintf("buffer ring data count=%d size=%d", count, size), Errno: err.(unix.Errno)}
	}
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&b.entries[0]))), ringEntries: uint32(count), bgid: group}
	if _, errno := sysRegister(r.fd, registerPbufRing, unsafe.Pointer(&reg), 1); errno != 0 {
		b.unmap()
		e := &Error{Op: "io_uring_register", Detail: fmt.Sprintf("IORING_REGISTER_PBUF_RING group=%d entries=%d", group, count), Errno: errno}
		if errno == unix.EINVAL {
			e.Hint = "provided buffer rings need Linux 5.19"
		}
		return nil, e
	}
	for bid := 0; bid < count; bid++ {
		b.Add(uint16(bid))
	}
	b.Advance()
	r.bufRings = append(r.bufRings, b)
	return b, nil
}

// Group is the buffer group id operations name to select from this ring.
func (b *BufRing) Group() uint16 { return b.group }

// Size is the size of each buffer.
func (b *BufRing) Size() int { return b.size }

// Bytes returns the first n bytes of buffer bid, as the kernel filled them (n
// is clamped to 0 and Size; an id out of range or a closed ring gives nil). The
// slice is valid until bid is recycled; copy what must outlive that.
func (b *BufRing) Bytes(bid uint16, n int) []byte {
	if b.data == nil || uint32(bid) >= b.count {
		return nil
	}
	n = min(max(n, 0), b.size)
	off := int(bid) * b.size
	return b.data[off : off+n : off+b.size]
}

// Add writes buffer bid into the next ring entry without publishing it; Advance
// publishes every entry added so far. An id out of range, or a ring already
// unmapped, is ignored.
func (b *BufRing) Add(bid uint16) {
	if b.entries == nil || uint32(bid) >= b.count {
		return
	}
	e := b.entries[int(b.tail&uint16(b.count-1))*sizeofBufRingEntry:]
	*(*uint64)(unsafe.Pointer(&e[0])) = uint64(uintptr(unsafe.Pointer(&b.data[int(bid)*b.size])))
	*(*uint32)(unsafe.Pointer(&e[8])) = uint32(b.size)
	*(*uint16)(unsafe.Pointer(&e[12])) = bid
	b.tail++
}

// Advance publishes the entries added since the last Advance, with a
// store-release of the ring's tail so the kernel sees each entry before the
// tail that covers it. Go's sync/atomic has no 16-bit store, so the 16-bit
// tail is stored with the 32-bit word it shares with bufs[0].bid: the layer
// is the only writer of both, and that bid is rewritten with its own value.
func (b *BufRing) Advance() {
	if b.entries == nil {
		return
	}
	word := (*uint32)(unsafe.Pointer(&b.entries[bufRingTailWordOffset]))
	var w uint32
	halves := (*[2]uint16)(unsafe.Pointer(&w))
	halves[0] = *(*uint16)(unsafe.Pointer(&b.entries[bufRingTailWordOffset]))
	halves[1] = b.tail
	atomic.StoreUint32(word, w)
}

// Recycle gives buffer bid back to the kernel: Add then Advance. An id out of
// range, or a ring already unmapped, is ignored.
func (b *BufRing) Recycle(bid uint16) {
	if b.entries == nil || uint32(bid) >= b.count {
		return
	}
	b.Add(bid)
	b.Advance()
	b.recycled++
}

// Recycled counts the buffers given back by Recycle.
func (b *BufRing) Recycled() uint64 { return b.recycled }

// Close unregisters the buffer group and unmaps its memory. Operations still
// armed on the group end with ENOBUFS; a BufRing not closed is unmapped by the
// Ring's Close, after the ring descriptor is closed.
func (b *BufRing) Close() error {
	r := b.ring
	for i, x := range r.bufRings {
		if x == b {
			r.bufRings = append(r.bufRings[:i], r.bufRings[i+1:]...)
			break
		}
	}
	var err error
	if !r.closed {
		reg := bufReg{bgid: b.group}
		if _, errno := sysRegister(r.fd, unregisterPbufRing, unsafe.Pointer(&reg), 1); errno != 0 {
			err = &Error{Op: "io_uring_register", Detail: fmt.Sprintf("IORING_UNREGISTER_PBUF_RING group=%d", b.group), Errno: errno}
		}
	}
	if err == nil {
		b.unmap()
	}
	return err
}

func (b *BufRing) unmap() {
	if b.entries != nil {
		unix.Munmap(b.entries)
	}
	if b.data != nil {
		unix.Munmap(b.data)
	}
	b.entries, b.data = nil, nil
}

// inBufRing reports whether p lies in the data of one of the ring's buffer
// rings: mapped memory, which needs no pin.
func (r *Ring) inBufRing(p *byte) bool {
	a := uintptr(unsafe.Pointer(p))
	for _, b := range r.bufRings {
		if len(b.data) > 0 {
			lo := uintptr(unsafe.Pointer(&b.data[0]))
			if a >= lo && a < lo+uintptr(len(b.data)) {
				return true
			}
		}
	}
	return false
}
