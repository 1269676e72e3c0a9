package cases

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reactorlab/reactorlab/conformance"
	"github.com/reactorlab/reactorlab/faults"
	"github.com/reactorlab/reactorlab/reactors"
	"github.com/reactorlab/reactorlab/wire"
)

// The hot-load cases (S1, S2, T1, X1) share one stimulus: hot connections
// that keep about 2 MiB of small frames outstanding, each frame costing
// hotCost of server CPU, so a turn that ignores its budgets runs until
// the out-queue's high watermark (1 MiB of echoes, ~11,000 frames, over
// 4 s) instead of ending after at most one budget (a few ms).
const (
	hotConns   = 2
	hotCost    = 400 * time.Microsecond
	hotPayload = 64
	hotBatch   = 512 // frames per write (48 KiB)
	hotCredits = 40  // batches outstanding (≈ 2 MiB)
)

// hotTweak is the reference configuration of the hot-load cases: the
// frame cost, and a clock read every 4 frames so the time budget ends a
// turn within 1 ms + 4 frames (the default, 16, would allow 3.2 ms).
func hotTweak(_ reactors.DesignName, cfg *reactors.Config) {
	cfg.Callback = fmt.Sprintf("fixed:%v", hotCost)
	cfg.Budgets.ClockEvery = 4
}

// hot is a running hot load.
type hot struct {
	loadState
	wg     sync.WaitGroup
	links  []*faults.TCPLink
	echoed atomic.Uint64
}

// loadState is what a case's load keeps of its own end: whether it is
// stopping, and its first error before that (errors once it stops are the
// stop's own doing and are not kept).
type loadState struct {
	stopping atomic.Bool
	mu       sync.Mutex
	err      error
}

func (s *loadState) fail(err error) {
	s.mu.Lock()
	if s.err == nil && !s.stopping.Load() {
		s.err = err
	}
	s.mu.Unlock()
}

// Err is the load's first error.
func (s *loadState) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// startHot starts hotConns hot connections to addr; stop them with stop.
func startHot(c *conformance.C, addr string) *hot {
	h := &hot{}
	for i := 0; i < hotConns; i++ {
		link := dialQuiet(c, fmt.Sprintf("hot conn %d", i+1), addr)
		h.links = append(h.links, link)
		credits := make(chan struct{}, hotCredits)
		for j := 0; j < hotCredits; j++ {
			credits <- struct{}{}
		}
		token := uint64(9000 + i)
		h.wg.Add(2)
		go h.write(link, token, credits)
		go h.read(link, token, credits)
	}
	c.Cleanup(h.stop)
	return h
}

func (h *hot) write(link *faults.TCPLink, token uint64, credits chan struct{}) {
	defer h.wg.Done()
	var buf []byte
	payload := make([]byte, hotPayload)
	seq := uint64(0)
	for !h.stopping.Load() {
		if _, ok := <-credits; !ok {
			return // the reader ended: no more credit
		}
		buf = buf[:0]
		for i := 0; i < hotBatch; i++ {
			buf = wire.AppendFrame(buf, wire.KindData, 0, token, seq, 0, payload)
			seq++
		}
		if _, err := link.Conn().Write(buf); err != nil {
			h.fail(fmt.Errorf("hot conn %d: write: %w", token, err))
			return
		}
	}
}

func (h *hot) read(link *faults.TCPLink, token uint64, credits chan struct{}) {
	defer h.wg.Done()
	dec := wire.NewDecoder(clientMaxFrame)
	buf := make([]byte, 256<<10)
	seq, inBatch := uint64(0), 0
	for {
		n, err := link.Conn().Read(buf)
		if err != nil {
			h.fail(fmt.Errorf("hot conn %d: read after %d echoes: %w", token, seq, err))
			close(credits) // unblock the writer
			return
		}
		dec.Write(buf[:n])
		for {
			hd, _, ok, err := dec.Next()
			if err != nil {
				h.fail(err)
				close(credits)
				return
			}
			if !ok {
				break
			}
			if hd.Kind == wire.KindData && (hd.Token != token || hd.Seq != seq) {
				h.fail(fmt.Errorf("hot conn %d: got %v token %d seq %d, want seq %d", token, hd.Kind, hd.Token, hd.Seq, seq))
			}
			seq++
			h.echoed.Add(1)
			if inBatch++; inBatch == hotBatch {
				inBatch = 0
				select {
				case credits <- struct{}{}:
				default:
				}
			}
		}
	}
}

// stop ends the load (the connections are reset) and returns its first
// error, if any.
func (h *hot) stop() {
	if h.stopping.Swap(true) {
		return
	}
	for _, l := range h.links {
		l.Reset()
	}
	h.wg.Wait()
}

// underHotLoad runs probes (one per peer) for 1.5 s under the hot load and
// fails the case if any peer's round trips break the bound (overBound).
func underHotLoad(c *conformance.C, peers []*peer, kind wire.Kind, bound time.Duration) {
	h := startHot(c, c.Instance().Addr())
	// A round trip longer than twice the bound fails the case whatever
	// follows (overBound), so none is waited for much longer than that.
	results := probeAll(c, peers, kind, 2*bound+time.Second)
	echoed := h.echoed.Load()
	// Probes that will fail the case are explained by diagnose now, the
	// hot load still running: the condition they starved under holds
	// until it stops below. The lines join the evidence only if the case
	// fails.
	var d diagnosis
	loadErr := h.Err
	if anyBroke(results, bound) {
		// The load's state is the probes' end's: what it meets while the
		// diagnosis keeps it running is not the case's.
		err := h.Err()
		loadErr = func() error { return err }
		d = diagnoseServing(c.Context(), c.Instance(), "the "+diagnosisWindow.String()+" after the probes, the hot load still running")
	}
	h.stop()
	if err := loadErr(); err != nil {
		c.Fatalf("hot load: %v", err)
	}
	c.Evidencef("hot connections: %d frames echoed in %v", echoed, probeFor)
	judgeProbes(c, peers, results, bound, "starved under hot load")
	if c.Failed() {
		d.record(c)
		if f := c.Stop(); f.Stats != nil {
			if hs, ok := f.Stats.Histograms[reactors.HistRotation]; ok {
				c.Evidencef("rotation interval: p99 %v, max %v", time.Duration(hs.P99), time.Duration(hs.Max))
			}
		}
	}
}
