package freespace

import (
	"cmp"
	"fmt"
	"slices"
)

// Build returns the records of a block group built from scratch (mkfs, or a
// rebuilt tree) with the given free extents, in key order: the info item,
// then extent records, or bitmaps if there are more free extents than the
// high threshold. That is the layout the kernel reaches when it populates a
// group range by range: every range adds one extent, so the count only
// grows, and the group converts once, when it passes the threshold.
// Adjacent extents are merged; overlapping ones are an error.
// mirrors populate_free_space_tree
func Build(bg BlockGroup, free []Extent, sectorSize uint32) ([]Item, error) {
	items, err := build(bg, free, sectorSize)
	return items, opError("build", bg, 0, 0, err)
}

func build(bg BlockGroup, free []Extent, sectorSize uint32) ([]Item, error) {
	g, err := newGeom(bg, sectorSize)
	if err != nil {
		return nil, err
	}
	ext, err := g.normalize(free)
	if err != nil {
		return nil, err
	}
	info := Info{ExtentCount: uint32(len(ext))}
	if uint64(len(ext)) > uint64(g.high) {
		info.Flags = FlagUsingBitmaps
	}
	items := []Item{{InfoKey(bg), info.Encode()}}
	if !info.UsingBitmaps() {
		for _, x := range ext {
			items = append(items, Item{span{x.s, x.e}.key(), nil})
		}
		return items, nil
	}
	for w, i := 0, 0; w < g.windows; w++ {
		ws, we := g.window(w)
		bits := make([]byte, g.dataSize(w))
		for ; i < len(ext) && ext[i].s < we; i++ {
			lo, hi := max(ext[i].s, ws), min(ext[i].e, we)
			setBits(bits, g.sectors(lo-ws), g.sectors(hi-lo), true)
			if ext[i].e > we {
				break // goes on in the next window
			}
		}
		items = append(items, Item{g.bitmapKey(w), bits})
	}
	return items, nil
}

// normalize sorts and checks free extents and merges adjacent ones.
func (g *geom) normalize(free []Extent) ([]span, error) {
	sorted := slices.Clone(free)
	slices.SortFunc(sorted, func(a, b Extent) int {
		return cmp.Compare(a.Start, b.Start)
	})
	var out []span
	for _, x := range sorted {
		s, e, err := g.checkRange(x.Start, x.Length)
		if err != nil {
			return nil, fmt.Errorf("free extent %d+%d: %w", uint64(x.Start), x.Length, err)
		}
		n := len(out)
		switch {
		case n > 0 && s < out[n-1].e:
			return nil, fmt.Errorf("free extent %d+%d overlaps %d+%d", s, x.Length, out[n-1].s, out[n-1].e-out[n-1].s)
		case n > 0 && s == out[n-1].e:
			out[n-1].e = e
		default:
			out = append(out, span{s, e})
		}
	}
	return out, nil
}
