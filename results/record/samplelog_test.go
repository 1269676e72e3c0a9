package record

import (
	"testing"
)

func TestSampleLogKeepsConsecutiveBlocksSpreadOverTheRun(t *testing.T) {
	const blockLen, maxBlocks, total = 16, 8, 100_000
	log := NewSampleLog(blockLen, maxBlocks)
	for i := range int64(total) {
		log.Add(i, i)
	}
	if log.Count() != total {
		t.Fatalf("Count %d, want %d", log.Count(), total)
	}
	blocks := log.Blocks()
	if len(blocks) < maxBlocks/2 || len(blocks) > maxBlocks+1 {
		t.Fatalf("%d blocks kept, want %d to %d", len(blocks), maxBlocks/2, maxBlocks+1)
	}
	for _, b := range blocks {
		for j, s := range b.Samples {
			if want := int64(b.Index*blockLen + j); s.Value != want || s.At != want {
				t.Fatalf("block %d sample %d is %+v, want the %d-th added: blocks must hold consecutive samples", b.Index, j, s, want)
			}
		}
	}
	first, last := blocks[0].Samples[0].Value, blocks[len(blocks)-1].Samples[0].Value
	if first != 0 || last < total*3/4 {
		t.Errorf("kept blocks start at samples %d and %d of %d: they must span the run", first, last, total)
	}
}

// expGaps draws n exponential gaps of mean 1.
