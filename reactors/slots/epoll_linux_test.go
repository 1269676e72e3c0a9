//go:build linux

package slots

import (
	"math"
	"testing"

	"golang.org/x/sys/unix"
)

func TestPutRefRoundTrip(t *testing.T) {
	for _, r := range []Ref{
		0,
		MakeRef(0, 1),
		MakeRef(1, 0),
		MakeRef(MaxCapacity-1, 12345),
		MakeRef(math.MaxInt32, math.MaxInt32),
		MakeRef(math.MaxInt32+1, math.MaxInt32+1), // negative int32 in the event
		MakeRef(math.MaxUint32, math.MaxUint32),
	} {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET}
		PutRef(&ev, r)
		if got := RefOf(&ev); got != r {
			t.Errorf("RefOf(PutRef(%v)) = %v", r, got)
		}
		if ev.Events != unix.EPOLLIN|unix.EPOLLET {
			t.Errorf("PutRef(%v) changed Events to %#x", r, ev.Events)
		}
	}
	PutRef(nil, 1) // no panic
	if RefOf(nil) != 0 {
		t.Error("RefOf(nil) != 0")
	}
}

// TestPutRefThroughKernel registers an eventfd with a Ref in its data word and
// checks that epoll_wait hands the same Ref back.
func TestPutRefThroughKernel(t *testing.T) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatalf("epoll_create1: %v", err)
	}
	defer unix.Close(epfd)
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatalf("eventfd: %v", err)
	}
	defer unix.Close(efd)
	want := MakeRef(math.MaxUint32, math.MaxUint32-1)
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	PutRef(&ev, want)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		t.Fatalf("epoll_ctl add: %v", err)
	}
	if _, err := unix.Write(efd, []byte{1, 0, 0, 0, 0, 0, 0, 0}); err != nil {
		t.Fatalf("eventfd write: %v", err)
	}
	evs := make([]unix.EpollEvent, 4)
	var n int
	for {
		n, err = unix.EpollWait(epfd, evs, 5000)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil || n != 1 {
		t.Fatalf("epoll_wait = %d, %v; want 1 event", n, err)
	}
	if got := RefOf(&evs[0]); got != want {
		t.Errorf("RefOf(event) = %v, want %v", got, want)
	}
}
