package freespace

// addExtent records [start, end) as free in the extent layout, merging with a
// free neighbour on either side:
//  1. no neighbour: insert the range; one more extent (may convert to bitmaps).
//  2. a neighbour ending at start: absorb it; no change in the count.
//  3. a neighbour starting at end: absorb it; no change in the count.
//  4. both: absorb both; one extent fewer.
//
// mirrors add_free_space_extent
func addExtent(e Editor, g *geom, info Info, start, end uint64) error {
	merged := span{start, end}
	delta := 1
	var left, right span
	if start > g.start {
		l, ok, err := g.lastExtentAtOrBefore(e, start-1)
		if err != nil {
			return err
		}
		if ok && l.e > start {
			return corrupt("range overlaps free extent %d+%d", l.s, l.e-l.s)
		}
		if ok && l.e == start {
			left, merged.s = l, l.s
			delta--
		}
	}
	r, ok, err := g.firstExtentFrom(e, start)
	if err != nil {
		return err
	}
	if ok && r.s < end {
		return corrupt("range overlaps free extent %d+%d", r.s, r.e-r.s)
	}
	if ok && r.s == end {
		right, merged.e = r, r.e
		delta--
	}
	for _, n := range []span{left, right} {
		if n.e != 0 {
			if err := e.Delete(n.key()); err != nil {
				return err
			}
		}
	}
	if err := e.Insert(merged.key(), nil); err != nil {
		return err
	}
	return updateCount(e, g, info, delta)
}

// removeExtent records [start, end) as used in the extent layout. The range
// must lie inside one free extent; what is left of it on either side stays:
//  1. the whole extent: delete it; one extent fewer.
//  2. its beginning: the rest at the end stays; no change in the count.
//  3. its end: the rest at the beginning stays; no change in the count.
//  4. its middle: two pieces stay; one more extent (may convert to bitmaps).
//
// mirrors remove_free_space_extent
func removeExtent(e Editor, g *geom, info Info, start, end uint64) error {
	f, ok, err := g.lastExtentAtOrBefore(e, start)
	if err != nil {
		return err
	}
	if !ok || end > f.e {
		return corrupt("range is not free in the free space tree")
	}
	if err := e.Delete(f.key()); err != nil {
		return err
	}
	delta := -1
	if start > f.s {
		if err := e.Insert(span{f.s, start}.key(), nil); err != nil {
			return err
		}
		delta++
	}
	if end < f.e {
		if err := e.Insert(span{end, f.e}.key(), nil); err != nil {
			return err
		}
		delta++
	}
	return updateCount(e, g, info, delta)
}
