package freespace

// updateCount adds delta to the group's extent_count and converts the layout
// when the count crosses a threshold: to bitmaps above high, back to extents
// below low. A delta of zero changes nothing and converts nothing.
// mirrors update_free_space_extent_count
func updateCount(e Editor, g *geom, info Info, delta int) error {
	if delta == 0 {
		return nil
	}
	n := int64(info.ExtentCount) + int64(delta)
	if n < 0 || n > int64(^uint32(0)) {
		return corrupt("free space info of block group %d: extent count %d%+d out of range", g.start, info.ExtentCount, delta)
	}
	info.ExtentCount = uint32(n)
	if err := e.Update(InfoKey(g.bg()), info.Encode()); err != nil {
		return err
	}
	switch {
	case !info.UsingBitmaps() && info.ExtentCount > g.high:
		return toBitmaps(e, g, info)
	case info.UsingBitmaps() && info.ExtentCount < g.low:
		return toExtents(e, g, info)
	}
	return nil
}
