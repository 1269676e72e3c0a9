package slots

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
)

type src struct{ id int }

func mustTable(t testing.TB, capacity int) *Table[src] {
	t.Helper()
	tab, err := NewTable[src](capacity)
	if err != nil {
		t.Fatalf("NewTable(%d): %v", capacity, err)
	}
	return tab
}

func TestRefPacking(t *testing.T) {
	for _, tc := range []struct{ slot, gen uint32 }{
		{0, 0}, {0, 1}, {1, 0}, {7, 3},
		{math.MaxUint32, 1}, {1, math.MaxUint32}, {math.MaxUint32, math.MaxUint32},
	} {
		r := MakeRef(tc.slot, tc.gen)
		if r.Slot() != tc.slot || r.Gen() != tc.gen {
			t.Errorf("MakeRef(%d, %d) = %#x: Slot %d Gen %d", tc.slot, tc.gen, uint64(r), r.Slot(), r.Gen())
		}
	}
	if MakeRef(0, 0) != 0 {
		t.Errorf("MakeRef(0, 0) = %#x, want the zero Ref", uint64(MakeRef(0, 0)))
	}
}

func TestNewTableCapacity(t *testing.T) {
	for _, tc := range []struct {
		capacity int
		ok       bool
	}{
		{-1, false}, {0, false}, {1, true}, {1024, true}, {MaxCapacity + 1, false},
	} {
		tab, err := NewTable[src](tc.capacity)
		if (err == nil) != tc.ok {
			t.Errorf("NewTable(%d): err = %v, want ok=%v", tc.capacity, err, tc.ok)
			continue
		}
		if tc.ok && tab.Cap() != tc.capacity {
			t.Errorf("NewTable(%d).Cap() = %d", tc.capacity, tab.Cap())
		}
	}
}

func TestAllocGetFree(t *testing.T) {
	tab := mustTable(t, 2)
	a, b := &src{1}, &src{2}
	ra, err := tab.Alloc(a)
	if err != nil {
		t.Fatal(err)
	}
	if ra.Slot() != 0 || ra.Gen() != 1 {
		t.Errorf("first Alloc = %v, want 0/1 (lowest slot first, generation 1)", ra)
	}
	rb, err := tab.Alloc(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Alloc(&src{3}); !errors.Is(err, ErrFull) {
		t.Errorf("Alloc on a full table: err = %v, want ErrFull", err)
	}
	if _, err := tab.Alloc(nil); !errors.Is(err, ErrNilValue) {
		t.Errorf("Alloc(nil): err = %v, want ErrNilValue", err)
	}
	if v, ok := tab.Get(ra); !ok || v != a {
		t.Errorf("Get(%v) = %p, %v; want %p, true", ra, v, ok, a)
	}
	if tab.Len() != 2 {
		t.Errorf("Len = %d, want 2", tab.Len())
	}
	if !tab.Free(ra) {
		t.Errorf("Free(%v) = false", ra)
	}
	if tab.Free(ra) {
		t.Errorf("second Free(%v) = true, want false (double free)", ra)
	}
	if _, ok := tab.Get(ra); ok {
		t.Errorf("Get(%v) after Free succeeded", ra)
	}
	if v, ok := tab.Get(rb); !ok || v != b {
		t.Errorf("Get(%v) = %p, %v; want %p, true", rb, v, ok, b)
	}
	for _, r := range []Ref{0, MakeRef(0, 0), MakeRef(99, 1), MakeRef(math.MaxUint32, 1)} {
		if _, ok := tab.Get(r); ok {
			t.Errorf("Get(%v) succeeded for an invalid Ref", r)
		}
		if tab.Free(r) {
			t.Errorf("Free(%v) succeeded for an invalid Ref", r)
		}
	}
	if tab.Len() != 1 {
		t.Errorf("Len = %d, want 1", tab.Len())
	}
}

// TestStaleAfterReuse is the fd-reuse hazard: the freed slot is handed out
// again at once (LIFO), and an event still carrying the old Ref must not
// resolve to the new occupant.
func TestStaleAfterReuse(t *testing.T) {
	tab := mustTable(t, 8)
	var refs []Ref
	for i := range 5 {
		r, err := tab.Alloc(&src{i})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
	}
	old := refs[2]
	tab.Free(refs[1])
	tab.Free(old)
	newer := &src{100}
	r, err := tab.Alloc(newer)
	if err != nil {
		t.Fatal(err)
	}
	if r.Slot() != old.Slot() {
		t.Fatalf("Alloc after Free(%v) gave slot %d, want the same slot (LIFO)", old, r.Slot())
	}
	if r.Gen() != old.Gen()+1 {
		t.Errorf("reused slot generation = %d, want %d", r.Gen(), old.Gen()+1)
	}
	if v, ok := tab.Get(old); ok {
		t.Errorf("stale Get(%v) = %+v, want dropped", old, *v)
	}
	if tab.Free(old) {
		t.Errorf("stale Free(%v) freed the new occupant", old)
	}
	if v, ok := tab.Get(r); !ok || v != newer {
		t.Errorf("Get(%v) = %p, %v; want the new occupant", r, v, ok)
	}
	// Slot ignores generations: the mutant's view sees the new occupant.
	if sr, v, ok := tab.Slot(old.Slot()); !ok || sr != r || v != newer {
		t.Errorf("Slot(%d) = %v, %p, %v; want %v, %p, true", old.Slot(), sr, v, ok, r, newer)
	}
	// Next Alloc takes the next most recently freed slot.
	r2, _ := tab.Alloc(&src{101})
	if r2.Slot() != refs[1].Slot() {
		t.Errorf("second Alloc slot = %d, want %d (LIFO)", r2.Slot(), refs[1].Slot())
	}
}

func TestGenerationWrapSkipsZero(t *testing.T) {
	tab := mustTable(t, 1)
	tab.ents[0].gen.Store(math.MaxUint32 - 1)
	var prev Ref
	for _, want := range []uint32{math.MaxUint32, 1, 2} {
		r, err := tab.Alloc(&src{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Gen() != want {
			t.Fatalf("Alloc after %v: generation %d, want %d", prev, r.Gen(), want)
		}
		if r == 0 {
			t.Fatal("Alloc returned the zero Ref")
		}
		if _, ok := tab.Get(r); !ok {
			t.Errorf("Get(%v) failed for a live Ref", r)
		}
		if !tab.Free(r) {
			t.Errorf("Free(%v) = false", r)
		}
		prev = r
	}
}

func TestSlotAndRange(t *testing.T) {
	tab := mustTable(t, 4)
	want := map[Ref]*src{}
	for i := range 4 {
		v := &src{i}
		r, _ := tab.Alloc(v)
		want[r] = v
	}
	var freed Ref
	for r := range want {
		freed = r
		break
	}
	tab.Free(freed)
	delete(want, freed)
	if _, _, ok := tab.Slot(freed.Slot()); ok {
		t.Errorf("Slot(%d) of a freed slot succeeded", freed.Slot())
	}
	if _, _, ok := tab.Slot(4); ok {
		t.Error("Slot out of range succeeded")
	}
	got := map[Ref]*src{}
	tab.Range(func(r Ref, v *src) bool { got[r] = v; return true })
	if len(got) != len(want) {
		t.Fatalf("Range visited %d entries, want %d", len(got), len(want))
	}
	for r, v := range want {
		if got[r] != v {
			t.Errorf("Range: %v -> %p, want %p", r, got[r], v)
		}
	}
	// Stop early, and free from inside fn (shutdown).
	n := 0
	tab.Range(func(Ref, *src) bool { n++; return false })
	if n != 1 {
		t.Errorf("Range after false: %d calls, want 1", n)
	}
	tab.Range(func(r Ref, _ *src) bool { tab.Free(r); return true })
	if tab.Len() != 0 {
		t.Errorf("Len after freeing all in Range = %d", tab.Len())
	}
	tab.Range(nil) // no panic
}

// TestConcurrent runs owners that Alloc, Get and Free their own sources while
// readers Get Refs issued to others. Run it with -race.
func TestConcurrent(t *testing.T) {
	type val struct {
		owner int
		ref   Ref // set by the owner after Alloc; read under the race detector's eye
		mu    sync.Mutex
	}
	const capacity = 16 // small: slots are reused constantly
	tab, err := NewTable[val](capacity)
	if err != nil {
		t.Fatal(err)
	}
	owners := max(4, runtime.GOMAXPROCS(0))
	iters := 20000
	if testing.Short() {
		iters = 2000
	}
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr string
	)
	fail := func(msg string) { errOnce.Do(func() { firstErr = msg }) }
	// published holds recently issued Refs for the readers.
	var published [64]struct {
		sync.Mutex
		r Ref
	}
	for o := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				v := &val{owner: o}
				r, err := tab.Alloc(v)
				if errors.Is(err, ErrFull) {
					runtime.Gosched()
					continue
				}
				if err != nil {
					fail(err.Error())
					return
				}
				v.mu.Lock()
				v.ref = r
				v.mu.Unlock()
				p := &published[(o*iters+i)%len(published)]
				p.Lock()
				p.r = r
				p.Unlock()
				if got, ok := tab.Get(r); !ok || got != v {
					fail("owner: Get of own live Ref " + r.String() + " failed")
					return
				}
				if !tab.Free(r) {
					fail("owner: Free of own live Ref " + r.String() + " failed")
					return
				}
				// Freed before this Get began, in this goroutine: must be dropped,
				// even if another owner has already been given the same slot.
				if got, ok := tab.Get(r); ok {
					fail(fmt.Sprintf("Get(%v) after Free returned a value of owner %d", r, got.owner))
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	for k := range 2 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for i := k; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := &published[i%len(published)]
				p.Lock()
				r := p.r
				p.Unlock()
				v, ok := tab.Get(r)
				if !ok {
					continue
				}
				v.mu.Lock()
				vr := v.ref
				v.mu.Unlock()
				// The owner sets ref just after Alloc; if set, it must be r.
				if vr != 0 && vr != r {
					fail("reader: Get(" + r.String() + ") returned the value of " + vr.String())
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	if firstErr != "" {
		t.Fatal(firstErr)
	}
	if tab.Len() != 0 {
		t.Errorf("Len after all frees = %d", tab.Len())
	}
}

func BenchmarkGet(b *testing.B) {
	tab := mustTable(b, 1024)
	refs := make([]Ref, 1024)
	for i := range refs {
		refs[i], _ = tab.Alloc(&src{i})
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		var hit int
		for i := 0; b.Loop(); i++ {
			if _, ok := tab.Get(refs[i&1023]); ok {
				hit++
			}
		}
		if hit == 0 {
			b.Fatal("no hits")
		}
	})
	b.Run("stale", func(b *testing.B) {
		b.ReportAllocs()
		stale := MakeRef(5, refs[5].Gen()+1)
		for b.Loop() {
			if _, ok := tab.Get(stale); ok {
				b.Fatal("stale hit")
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, ok := tab.Get(refs[i&1023]); !ok {
					b.Error("miss")
					return
				}
				i++
			}
		})
	})
}

func BenchmarkAllocFree(b *testing.B) {
	tab := mustTable(b, 1024)
	v := &src{}
	b.ReportAllocs()
	for b.Loop() {
		r, err := tab.Alloc(v)
		if err != nil {
			b.Fatal(err)
		}
		tab.Free(r)
	}
}
