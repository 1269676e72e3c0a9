package cases

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
)

// r2Case is R2: 8 connections pipelining 150 exchanges each all make
// progress: none is owed an answer for long.
func r2Case() conformance.Case {
	return conformance.Case{
		ID:    "R2",
		Title: "no connection stalls",
		Claim: fmt.Sprintf("%d connections doing %d exchanges each (1 to 3 frames in flight) all make progress: a watchdog names any connection with an answer owed and none for too long", r2Conns, r2Exchanges),
		Bound: fmt.Sprintf("no connection owed an answer for more than %v (a correct reactor answers within a round, milliseconds)", r2StallBound),
		Run:   runR2,
	}
}

// r2Conn is one connection's watchdog state.
type r2Conn struct {
	mu       sync.Mutex
	owed     int       // frames sent and not yet echoed
	progress time.Time // last echo (or first send)
	done     bool
}

// R2's load: r2Conns connections of r2Exchanges exchanges each; a
// connection owed an answer with none for r2StallBound has stalled.
const (
	r2Conns      = 8
	r2Exchanges  = 150
	r2StallBound = time.Second
)

func runR2(c *conformance.C) {
	const conns, exchanges, stallBound = r2Conns, r2Exchanges, r2StallBound
	state := make([]*r2Conn, conns)
	errs := make(chan error, conns)
	for i := range state {
		state[i] = &r2Conn{progress: time.Now()}
		p := dial(c, fmt.Sprintf("conn %d", i+1), c.Instance().Addr())
		go func() {
			errs <- r2Exchange(p, uint64(i+1), exchanges, state[i])
		}()
	}
	// The watchdog: any connection owed an answer with no progress for the
	// bound is named, with what it was owed.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	finished := 0
	var failed []string
	for finished < conns && len(failed) == 0 {
		select {
		case err := <-errs:
			finished++
			if err != nil {
				failed = append(failed, err.Error())
			}
		case now := <-tick.C:
			for i, s := range state {
				s.mu.Lock()
				if !s.done && s.owed > 0 && now.Sub(s.progress) > stallBound {
					failed = append(failed, fmt.Sprintf("conn %d stalled: owed %d echoes, no progress for %v", i+1, s.owed, now.Sub(s.progress).Round(time.Millisecond)))
				}
				s.mu.Unlock()
			}
		}
	}
	if len(failed) > 0 {
		c.Fatalf("%s", strings.Join(failed, "; "))
	}
}

// r2Exchange does n exchanges of 1..3 pipelined frames on p.
func r2Exchange(p *peer, token uint64, n int, s *r2Conn) error {
	rng := rand.New(rand.NewPCG(token, 2))
	seq := uint64(0)
	defer func() { s.mu.Lock(); s.done = true; s.mu.Unlock() }()
	for x := 0; x < n; x++ {
		k := 1 + rng.IntN(3)
		var buf []byte
		for j := 0; j < k; j++ {
			buf = append(buf, dataFrame(token, seq+uint64(j), 16+rng.IntN(200))...)
		}
		s.mu.Lock()
		s.owed += k
		s.mu.Unlock()
		if _, err := p.link.Write(buf); err != nil {
			return fmt.Errorf("conn %d: write: %w", token, err)
		}
		for j := 0; j < k; j++ {
			g, err := p.next(10 * time.Second) // the watchdog owns the bound
			if err != nil {
				return fmt.Errorf("conn %d: exchange %d: %w", token, x, err)
			}
			if g.h.Token != token || g.h.Seq != seq {
				return fmt.Errorf("conn %d: got %s, want seq %d", token, g, seq)
			}
			seq++
			s.mu.Lock()
			s.owed--
			s.progress = time.Now()
			s.mu.Unlock()
		}
	}
	return nil
}
