package freespace

import (
	"math/rand/v2"
	"testing"
)

// TestBitOps checks the word-at-a-time bit search against a bit-at-a-time one.
func TestBitOps(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 3))
	for range 2000 {
		nbits := 1 + r.Uint64N(300)
		b := make([]byte, (nbits+7)/8)
		for range r.IntN(6) {
			first := r.Uint64N(nbits)
			setBits(b, first, r.Uint64N(nbits-first+1), r.IntN(2) == 0)
		}
		for range 20 {
			from := r.Uint64N(nbits + 1)
			for _, set := range []bool{true, false} {
				want := from
				for want < nbits && testBit(b, want) != set {
					want++
				}
				if got := findBit(b, from, nbits, set); got != want {
					t.Fatalf("findBit(%x, %d, %d, %v) = %d, want %d", b, from, nbits, set, got, want)
				}
			}
		}
	}
}
