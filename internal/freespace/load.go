package freespace

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// Load returns a block group's free extents, merged and in order, from
// either layout. It reads the records up to the next group's
// FREE_SPACE_INFO, as the kernel does, and checks what btrfs check checks:
// records inside the group, extent records neither overlapping nor adjacent,
// bitmaps where and as large as the group's geometry puts them, and
// extent_count equal to the free extents found. Any failure satisfies
// errors.Is(err, diskio.ErrCorrupt); a missing info item, fs.ErrNotExist.
// mirrors btrfs_load_free_space_tree (load_free_space_extents,
// load_free_space_bitmaps)
func Load(e Editor, bg BlockGroup, sectorSize uint32) ([]Extent, error) {
	out, err := load(e, bg, sectorSize)
	return out, opError("load", bg, 0, 0, err)
}

func load(e Editor, bg BlockGroup, sectorSize uint32) ([]Extent, error) {
	g, err := newGeom(bg, sectorSize)
	if err != nil {
		return nil, err
	}
	info, err := ReadInfo(e, bg)
	if err != nil {
		return nil, err
	}
	l := loader{g: g, bitmaps: info.UsingBitmaps()}
	// Room for the extents the info item promises, but never more than the
	// group can hold (a corrupt count must not make us allocate gigabytes).
	l.out = make([]Extent, 0, min(uint64(info.ExtentCount), g.sectors(g.end-g.start)/2+1))
	min, _ := g.groupKeys()
	err = e.Range(min, ondisk.MaxKey, l.item)
	if err := firstErr(err, l.bad); err != nil {
		return nil, err
	}
	if l.bitmaps {
		if l.w != g.windows {
			return nil, corrupt("block group %d uses bitmaps but has %d of its %d bitmaps", g.start, l.w, g.windows)
		}
		if l.open {
			l.out = append(l.out, Extent{ondisk.LogicalAddr(l.runStart), g.end - l.runStart})
		}
	}
	if uint64(len(l.out)) != uint64(info.ExtentCount) {
		return nil, corrupt("free space info of block group %d records %d extents, counted %d", g.start, info.ExtentCount, len(l.out))
	}
	return l.out, nil
}

// loader walks a group's records in key order.
type loader struct {
	g        *geom
	bitmaps  bool
	out      []Extent
	bad      error
	w        int    // bitmaps: next window expected
	open     bool   // bitmaps: a free run reaches the end of the last bitmap
	runStart uint64 // bitmaps: where that run started
}

func (l *loader) item(k ondisk.Key, data []byte) bool {
	if k.Type == ondisk.FreeSpaceInfoKey {
		return false // the next block group
	}
	if l.bitmaps {
		l.bad = l.bitmap(k, data)
	} else {
		l.bad = l.extent(k)
	}
	return l.bad == nil
}

func (l *loader) extent(k ondisk.Key) error {
	r, err := l.g.extentRecord(k)
	if err != nil {
		return err
	}
	if n := len(l.out); n > 0 {
		prev := l.out[n-1]
		switch end := uint64(prev.End()); {
		case r.s < end:
			return corrupt("free space extent %v overlaps with previous %d+%d", k, uint64(prev.Start), prev.Length)
		case r.s == end:
			return corrupt("free space extent %v is unmerged with previous %d+%d", k, uint64(prev.Start), prev.Length)
		}
	}
	l.out = append(l.out, Extent{ondisk.LogicalAddr(r.s), r.e - r.s})
	return nil
}

func (l *loader) bitmap(k ondisk.Key, data []byte) error {
	g := l.g
	if err := g.checkBitmap(l.w, k, data); err != nil {
		return err
	}
	ws := uint64(k.ObjectID)
	nbits := g.sectors(k.Offset)
	l.w++
	if l.open && !testBit(data, 0) { // the run ended with the previous bitmap
		l.out = append(l.out, Extent{ondisk.LogicalAddr(l.runStart), ws - l.runStart})
		l.open = false
	}
	return runs(data, nbits, func(first, end uint64) error {
		if !l.open { // else the run goes on from the previous bitmap
			l.runStart = ws + first<<g.shift
		}
		l.open = end == nbits
		if !l.open {
			l.out = append(l.out, Extent{ondisk.LogicalAddr(l.runStart), ws + end<<g.shift - l.runStart})
		}
		return nil
	})
}
