package freespace

import (
	"encoding/binary"
	"math/bits"
)

// Little-endian bitmaps as the kernel's extent_buffer_bitmap_set and
// le_test_bit see them: bit i is bit i%8 of byte i/8.

func testBit(b []byte, i uint64) bool { return b[i>>3]&(1<<(i&7)) != 0 }

// setBits sets (or clears) bits [first, first+n).
// mirrors extent_buffer_bitmap_set / extent_buffer_bitmap_clear
func setBits(b []byte, first, n uint64, set bool) {
	i, end := first, first+n
	for i < end && i&7 != 0 {
		putBit(b, i, set)
		i++
	}
	var fill byte
	if set {
		fill = 0xff
	}
	for ; i+8 <= end; i += 8 {
		b[i>>3] = fill
	}
	for ; i < end; i++ {
		putBit(b, i, set)
	}
}

func putBit(b []byte, i uint64, set bool) {
	if set {
		b[i>>3] |= 1 << (i & 7)
	} else {
		b[i>>3] &^= 1 << (i & 7)
	}
}

// allBits reports whether bits [first, first+n) all equal set.
func allBits(b []byte, first, n uint64, set bool) bool {
	return findBit(b, first, first+n, !set) == first+n
}

// findBit returns the first bit in [from, nbits) equal to set, or nbits,
// looking at up to 64 bits at a time.
// mirrors find_next_bit_le / find_next_zero_bit_le
func findBit(b []byte, from, nbits uint64, set bool) uint64 {
	for i := from; i < nbits; {
		k := i >> 3
		var w uint64
		n := uint64(len(b)) - k // bytes left
		if n >= 8 {
			w, n = binary.LittleEndian.Uint64(b[k:]), 8
		} else {
			for j := range n {
				w |= uint64(b[k+j]) << (8 * j)
			}
		}
		if !set {
			w = ^w
		}
		sh := i & 7
		w >>= sh
		avail := 8*n - sh
		if avail < 64 {
			w &= 1<<avail - 1
		}
		if w != 0 {
			return min(i+uint64(bits.TrailingZeros64(w)), nbits)
		}
		i += avail
	}
	return nbits
}

// runs calls fn for every run of set bits in [0, nbits), in order.
func runs(b []byte, nbits uint64, fn func(first, end uint64) error) error {
	for i := findBit(b, 0, nbits, true); i < nbits; {
		j := findBit(b, i, nbits, false)
		if err := fn(i, j); err != nil {
			return err
		}
		i = findBit(b, j, nbits, true)
	}
	return nil
}
