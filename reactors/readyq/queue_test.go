package readyq

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/reactorlab/reactorlab/reactors/slots"
)

func ref(slot, gen uint32) slots.Ref { return slots.MakeRef(slot, gen) }

// op is one step of a scripted scenario: push (want = Push's result), pop
// (want = the Ref expected, 0 for empty) or remove.
type op struct {
	kind string // "push", "pop", "remove"
	r    slots.Ref
	ok   bool
}

func run(t *testing.T, q *Queue, ops []op) {
	t.Helper()
	for i, o := range ops {
		switch o.kind {
		case "push":
			if got := q.Push(o.r); got != o.ok {
				t.Fatalf("op %d: Push(%v) = %v, want %v", i, o.r, got, o.ok)
			}
		case "pop":
			got, ok := q.Pop()
			if ok != o.ok || got != o.r {
				t.Fatalf("op %d: Pop() = %v, %v; want %v, %v", i, got, ok, o.r, o.ok)
			}
		case "remove":
			q.Remove(o.r.Slot())
		}
	}
}

func TestScenarios(t *testing.T) {
	a1, a2, b1, c1 := ref(0, 1), ref(0, 2), ref(1, 1), ref(2, 1)
	for _, tc := range []struct {
		name        string
		ops         []op
		wantLen     int
		wantSkipped uint64
	}{
		{"dedup", []op{
			{"push", a1, true}, {"push", a1, false}, {"push", b1, true}, {"push", a1, false},
			{"pop", a1, true}, {"push", a1, true}, // popped: may queue again
			{"pop", b1, true}, {"pop", a1, true}, {"pop", 0, false},
		}, 0, 0},
		{"invalid refs refused", []op{
			{"push", 0, false}, {"push", ref(3, 0), false}, {"push", ref(4, 1), false},
			{"push", ref(1<<31, 1), false}, {"pop", 0, false},
		}, 0, 0},
		{"remove revokes a queued entry", []op{
			{"push", a1, true}, {"push", b1, true}, {"remove", a1, false},
			{"pop", b1, true}, {"pop", 0, false},
		}, 0, 1},
		{"remove then new generation: old skipped, new served once", []op{
			{"push", a1, true}, {"push", b1, true}, {"remove", a1, false},
			{"push", a2, true}, {"push", a2, false},
			{"pop", b1, true}, {"pop", a2, true}, {"pop", 0, false},
		}, 0, 1},
		{"new generation supersedes without remove", []op{
			{"push", a1, true}, {"push", b1, true}, {"push", a2, true},
			{"pop", b1, true}, {"pop", a2, true}, {"pop", 0, false},
		}, 0, 1},
		{"same ref re-pushed after remove is served at its new place", []op{
			{"push", a1, true}, {"push", b1, true}, {"remove", a1, false},
			{"push", c1, true}, {"push", a1, true},
			{"pop", b1, true}, {"pop", c1, true}, {"pop", a1, true}, {"pop", 0, false},
		}, 0, 1},
		{"remove of unqueued or out-of-range slot is ignored", []op{
			{"push", b1, true}, {"remove", a1, false}, {"remove", ref(99, 1), false},
			{"pop", b1, true},
		}, 0, 0},
		{"len counts live only", []op{
			{"push", a1, true}, {"push", b1, true}, {"push", c1, true}, {"remove", b1, false},
			{"push", a2, true},
		}, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := New(4)
			run(t, q, tc.ops)
			if q.Len() != tc.wantLen {
				t.Errorf("Len = %d, want %d", q.Len(), tc.wantLen)
			}
			if q.Skipped() != tc.wantSkipped {
				t.Errorf("Skipped = %d, want %d", q.Skipped(), tc.wantSkipped)
			}
		})
	}
}

// TestRoundRobin: three hot sources, each requeued at the tail after its
// turn, are served ABCABC...
func TestRoundRobin(t *testing.T) {
	q := New(8)
	srcs := []slots.Ref{ref(5, 1), ref(2, 7), ref(7, 3)}
	for _, r := range srcs {
		q.Push(r)
	}
	var got []slots.Ref
	for range 9 {
		r, ok := q.Pop()
		if !ok {
			t.Fatal("queue ran dry")
		}
		got = append(got, r)
		// Meanwhile, an event for every source arrives (dedup must hold).
		for _, s := range srcs {
			q.Push(s)
		}
	}
	want := slices.Concat(srcs, srcs, srcs)
	if !slices.Equal(got, want) {
		t.Errorf("served %v, want %v", got, want)
	}
}

func TestNewBadCapacity(t *testing.T) {
	for _, c := range []int{-5, 0} {
		q := New(c)
		if q.Push(ref(0, 1)) {
			t.Errorf("New(%d): Push accepted slot 0", c)
		}
		if _, ok := q.Pop(); ok {
			t.Errorf("New(%d): Pop returned an entry", c)
		}
	}
}

// model is the reference: an explicit ordered list of live Refs.
type model struct{ live []slots.Ref }

func (m *model) push(r slots.Ref) bool {
	i := slices.IndexFunc(m.live, func(x slots.Ref) bool { return x.Slot() == r.Slot() })
	if i >= 0 {
		if m.live[i] == r {
			return false
		}
		m.live = slices.Delete(m.live, i, i+1)
	}
	m.live = append(m.live, r)
	return true
}

func (m *model) pop() (slots.Ref, bool) {
	if len(m.live) == 0 {
		return 0, false
	}
	r := m.live[0]
	m.live = m.live[1:]
	return r, true
}

func (m *model) remove(slot uint32) {
	m.live = slices.DeleteFunc(m.live, func(x slots.Ref) bool { return x.Slot() == slot })
}

func TestRandomOpsMatchModel(t *testing.T) {
	const nslots = 12
	rng := rand.New(rand.NewPCG(7, 8))
	q := New(nslots)
	var m model
	for i := range 200000 {
		switch k := rng.IntN(10); {
		case k < 5:
			// Generations 1..3 so that dedup, supersede and re-push all happen.
			r := ref(uint32(rng.IntN(nslots)), uint32(1+rng.IntN(3)))
			if got, want := q.Push(r), m.push(r); got != want {
				t.Fatalf("op %d: Push(%v) = %v, model %v", i, r, got, want)
			}
		case k < 9:
			got, ok := q.Pop()
			want, wok := m.pop()
			if got != want || ok != wok {
				t.Fatalf("op %d: Pop() = %v, %v; model %v, %v", i, got, ok, want, wok)
			}
		default:
			s := uint32(rng.IntN(nslots))
			q.Remove(s)
			m.remove(s)
		}
		if q.Len() != len(m.live) {
			t.Fatalf("op %d: Len = %d, model %d", i, q.Len(), len(m.live))
		}
		if i%97 == 0 {
			for _, r := range m.live {
				if !q.Queued(r) {
					t.Fatalf("op %d: Queued(%v) = false for a live entry", i, r)
				}
			}
		}
	}
	if q.Skipped() == 0 {
		t.Error("no dead entry was skipped")
	}
}

func TestGrowKeepsOrder(t *testing.T) {
	const n = 10000
	q := New(n)
	for i := range n {
		q.Push(ref(uint32(i), 1))
		if i%3 == 0 {
			q.Remove(uint32(i)) // dead entries across the growth
		}
	}
	for i := range n {
		if i%3 == 0 {
			continue
		}
		r, ok := q.Pop()
		if !ok || r != ref(uint32(i), 1) {
			t.Fatalf("Pop = %v, %v; want %v", r, ok, ref(uint32(i), 1))
		}
	}
	if _, ok := q.Pop(); ok || q.Len() != 0 || q.Skipped() != (n+2)/3 {
		t.Errorf("after draining: ok %v Len %d Skipped %d", ok, q.Len(), q.Skipped())
	}
}

func TestSteadyStateZeroAlloc(t *testing.T) {
	const nslots = 1024
	q := New(nslots)
	gen := uint32(1)
	cycle := func() {
		for s := range uint32(nslots) {
			q.Push(ref(s, gen))
			q.Push(ref(s, gen)) // dedup
		}
		for s := uint32(0); s < nslots; s += 7 {
			q.Remove(s)
		}
		for range nslots / 2 {
			r, _ := q.Pop()
			q.Push(r) // requeue at tail
		}
		for {
			if _, ok := q.Pop(); !ok {
				break
			}
		}
		gen++
	}
	for range 10 {
		cycle()
	}
	if a := testing.AllocsPerRun(100, cycle); a != 0 {
		t.Errorf("steady-state cycle allocates %v times", a)
	}
}

func BenchmarkPushPop(b *testing.B) {
	const nslots = 1024
	q := New(nslots)
	for s := range uint32(nslots) {
		q.Push(ref(s, 1))
	}
	b.ReportAllocs()
	for b.Loop() {
		// One turn: take the head, an event for it arrives (dedup), requeue.
		r, _ := q.Pop()
		q.Push(r)
		q.Push(r)
	}
}
