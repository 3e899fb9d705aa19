package freespace

// bitAt reads the bit for the sector at addr.
// mirrors btrfs_free_space_test_bit
func (g *geom) bitAt(e Editor, r *bitmapReader, addr uint64, buf []byte) (bool, error) {
	w := g.windowOf(addr)
	b := buf[:g.dataSize(w)]
	if err := r.read(e, w, b); err != nil {
		return false, err
	}
	ws, _ := g.window(w)
	return testBit(b, g.sectors(addr-ws)), nil
}

// modifyBitmaps sets (add) or clears (remove) the bits of [start, end) in the
// bitmap layout, then counts what happened to the free extents from the bits
// just before and after the range:
//
//	add:    +1, -1 for a free neighbour on the left, -1 for one on the right
//	remove: -1, +1 for a free leftover on the left, +1 for one on the right
//
// Unlike the kernel, it first checks that every bit of the range is in the
// state the operation expects, and changes nothing if one is not. The range
// may span several bitmaps; each is read, changed and written back in turn.
// mirrors modify_free_space_bitmap
func modifyBitmaps(e Editor, g *geom, info Info, start, end uint64, remove bool) error {
	buf := make([]byte, BitmapSize)
	r := newBitmapReader(g)
	prev, next := false, false
	var err error
	if start > g.start {
		if prev, err = g.bitAt(e, r, start-g.sector, buf); err != nil {
			return err
		}
	}
	if end < g.end {
		if next, err = g.bitAt(e, r, end, buf); err != nil {
			return err
		}
	}
	// Check every bitmap first, then change them.
	for pass := 0; pass < 2; pass++ {
		for w := g.windowOf(start); w <= g.windowOf(end-1); w++ {
			ws, we := g.window(w)
			b := buf[:g.dataSize(w)]
			if err := r.read(e, w, b); err != nil {
				return err
			}
			first, last := max(start, ws), min(end, we)
			i, n := g.sectors(first-ws), g.sectors(last-first)
			if pass == 0 {
				if !allBits(b, i, n, remove) {
					if remove {
						return corrupt("range is not free in the free space tree")
					}
					return corrupt("range is already free in the free space tree")
				}
				continue
			}
			setBits(b, i, n, !remove)
			if err := e.Update(g.bitmapKey(w), b); err != nil {
				return err
			}
		}
	}
	delta := 1 - b2i(prev) - b2i(next) // merging with free neighbours
	if remove {
		delta = -1 + b2i(prev) + b2i(next) // leftovers on either side
	}
	return updateCount(e, g, info, delta)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
