package record

import "github.com/reactorlab/reactorlab/results/stats"

// Block is a run of consecutive samples as they were added: no sample
// between two of them was left out. Index counts the blocks added before
// it, so blocks from one log are in time order.
type Block struct {
	Index   int
	Samples []stats.Sample
}

// SampleLog keeps runs of consecutive samples spread evenly over a
// recording of unknown length, in bounded memory: the samples are cut
// into blocks of blockLen, and block i is kept when i is a multiple of
// the stride, which doubles (every other kept block dropped) whenever
// more than maxBlocks are kept. So at every moment the kept blocks are
// evenly spaced over all the samples so far, at most maxBlocks+1 of them
// (the one being filled included), and each holds consecutive samples:
// what a test of consecutive samples (their gaps, their correlation)
// needs, across the whole run and not only its start. Its memory is
// allocated once, at the first sample: adding samples after that
// allocates nothing, so a log costs a run the same whatever its length,
// and a log that is never used costs nothing. The zero value is not
// usable; NewSampleLog makes one.
type SampleLog struct {
	blockLen, maxBlocks int
	stride              int // block i is kept when i%stride == 0
	index               int // the block being filled
	filled              int // samples in it so far
	cur                 []stats.Sample
	kept                []Block
	free                [][]stats.Sample // block buffers not in use, cap blockLen each
}

// NewSampleLog returns a log of blocks of blockLen samples (≥ 2), at most
// maxBlocks (≥ 2) of them kept whole.
func NewSampleLog(blockLen, maxBlocks int) *SampleLog {
	return &SampleLog{blockLen: max(blockLen, 2), maxBlocks: max(maxBlocks, 2), stride: 1}
}

// allocate makes the log's buffers: maxBlocks+1 kept (before a
// thinning) and the one being filled.
func (s *SampleLog) allocate() {
	n := s.maxBlocks + 2
	s.kept = make([]Block, 0, s.maxBlocks+1)
	s.free = make([][]stats.Sample, 0, n)
	all := make([]stats.Sample, n*s.blockLen)
	for i := range n {
		s.free = append(s.free, all[i*s.blockLen:i*s.blockLen:(i+1)*s.blockLen])
	}
	s.cur = s.takeBuffer()
}

// takeBuffer returns an empty block buffer from the free list.
func (s *SampleLog) takeBuffer() []stats.Sample {
	b := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	return b[:0]
}

// Add logs one sample; a nil log drops it.
func (s *SampleLog) Add(at, value int64) {
	if s == nil {
		return
	}
	if s.free == nil {
		s.allocate()
	}
	if s.index%s.stride == 0 {
		s.cur = append(s.cur, stats.Sample{At: at, Value: value})
	}
	s.filled++
	if s.filled == s.blockLen {
		s.endBlock()
	}
}

// AddBatch logs values, all at one time; a nil log drops them.
func (s *SampleLog) AddBatch(at int64, values []int64) {
	if s == nil {
		return
	}
	for _, v := range values {
		s.Add(at, v)
	}
}

// endBlock closes the block being filled: kept if its index is still a
// multiple of the stride, then the kept ones thinned if too many.
func (s *SampleLog) endBlock() {
	if s.index%s.stride == 0 && len(s.cur) > 0 {
		s.kept = append(s.kept, Block{Index: s.index, Samples: s.cur})
		s.cur = s.takeBuffer()
	}
	s.index++
	s.filled = 0
	for len(s.kept) > s.maxBlocks {
		s.stride *= 2
		n := 0
		for _, b := range s.kept {
			if b.Index%s.stride == 0 {
				s.kept[n] = b
				n++
			} else {
				s.free = append(s.free, b.Samples)
			}
		}
		clear(s.kept[n:])
		s.kept = s.kept[:n]
	}
	if s.index%s.stride != 0 {
		s.cur = s.cur[:0]
	}
}

// Blocks returns the kept blocks in order, the one still being filled
// last when it is kept and holds two samples or more (a nil log holds
// none). The log keeps them; the caller must not change them.
func (s *SampleLog) Blocks() []Block {
	if s == nil {
		return nil
	}
	out := s.kept[:len(s.kept):len(s.kept)]
	if s.index%s.stride == 0 && len(s.cur) >= 2 {
		out = append(out, Block{Index: s.index, Samples: s.cur})
	}
	return out
}

// Count is the number of samples added (0 for a nil log).
func (s *SampleLog) Count() int64 {
	if s == nil {
		return 0
	}
	return int64(s.index)*int64(s.blockLen) + int64(s.filled)
}
