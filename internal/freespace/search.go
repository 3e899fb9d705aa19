package freespace

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// lookup copies the data of the item with exactly key k into a new slice.
func lookup(e Editor, k ondisk.Key) ([]byte, bool, error) {
	var data []byte
	found := false
	err := e.Range(k, k, func(got ondisk.Key, d []byte) bool {
		if got == k {
			data, found = append([]byte(nil), d...), true
		}
		return false
	})
	return data, found, err
}

// ReadInfo returns a block group's FREE_SPACE_INFO.
// mirrors btrfs_search_free_space_info
func ReadInfo(e Editor, bg BlockGroup) (Info, error) {
	k := InfoKey(bg)
	data, ok, err := lookup(e, k)
	if err != nil {
		return Info{}, err
	}
	if !ok {
		return Info{}, noInfo(bg)
	}
	info, ok := DecodeInfo(data)
	if !ok {
		return Info{}, corrupt("free space info %v has %d bytes, want %d", k, len(data), InfoSize)
	}
	return info, nil
}

// span is a free extent record [s, e); e == 0 means none.
type span struct{ s, e uint64 }

func (x span) key() ondisk.Key { return ExtentKey(x.s, x.e-x.s) }

// extentRecord decodes an extent record's key, checking it lies in the group.
func (g *geom) extentRecord(k ondisk.Key) (span, error) {
	if k.Type != ondisk.FreeSpaceExtentKey {
		return span{}, corrupt("unexpected %v among the free space extents of block group %d", k, g.start)
	}
	s, e := uint64(k.ObjectID), uint64(k.ObjectID)+k.Offset
	if k.Offset == 0 || e < s || s < g.start || e > g.end {
		return span{}, corrupt("free space extent %v outside block group %d+%d", k, g.start, g.end-g.start)
	}
	return span{s, e}, nil
}

// lastExtentAtOrBefore finds the extent record with the greatest start <= x.
// The Editor only ranges forward, so it looks back over growing distances;
// in the extent layout the group holds at most `high` records, and the first
// look (64 sectors) finds the neighbour of any but a sparse group.
// mirrors btrfs_search_prev_slot on (x, -1, -1)
func (g *geom) lastExtentAtOrBefore(e Editor, x uint64) (span, bool, error) {
	d := 64 * g.sector
	for {
		lo := g.start
		if x-g.start > d {
			lo = x - d
		}
		var last span
		var bad error
		min := ondisk.Key{ObjectID: ondisk.ObjectID(lo), Type: ondisk.FreeSpaceExtentKey}
		max := ondisk.Key{ObjectID: ondisk.ObjectID(x), Type: ondisk.FreeSpaceExtentKey, Offset: ^uint64(0)}
		err := e.Range(min, max, func(k ondisk.Key, _ []byte) bool {
			last, bad = g.extentRecord(k)
			return bad == nil
		})
		if err != nil || bad != nil {
			return span{}, false, firstErr(err, bad)
		}
		if last.e != 0 {
			return last, true, nil
		}
		if lo == g.start {
			return span{}, false, nil
		}
		d *= 8
	}
}

// firstExtentFrom finds the extent record with the least start >= x.
func (g *geom) firstExtentFrom(e Editor, x uint64) (span, bool, error) {
	if x >= g.end {
		return span{}, false, nil
	}
	var first span
	var bad error
	_, max := g.groupKeys()
	min := ondisk.Key{ObjectID: ondisk.ObjectID(x), Type: ondisk.FreeSpaceExtentKey}
	err := e.Range(min, max, func(k ondisk.Key, _ []byte) bool {
		first, bad = g.extentRecord(k)
		return false
	})
	if err != nil || bad != nil {
		return span{}, false, firstErr(err, bad)
	}
	return first, first.e != 0, nil
}

// bitmapReader copies bitmap items out of the tree; one serves a whole
// operation or conversion, so that reading allocates nothing.
type bitmapReader struct {
	g     *geom
	k     ondisk.Key
	buf   []byte
	found bool
	bad   error
	visit func(ondisk.Key, []byte) bool
}

func newBitmapReader(g *geom) *bitmapReader {
	r := &bitmapReader{g: g}
	r.visit = r.item
	return r
}

func (r *bitmapReader) item(k ondisk.Key, d []byte) bool {
	if k != r.k {
		return false
	}
	r.found = true
	if len(d) != len(r.buf) {
		r.bad = corrupt("free space bitmap %v has %d bytes, want %d", k, len(d), len(r.buf))
		return false
	}
	copy(r.buf, d)
	return false
}

// read copies window w's bitmap into buf (dataSize(w) bytes).
func (r *bitmapReader) read(e Editor, w int, buf []byte) error {
	r.k, r.buf, r.found, r.bad = r.g.bitmapKey(w), buf, false, nil
	if err := e.Range(r.k, r.k, r.visit); err != nil || r.bad != nil {
		return firstErr(err, r.bad)
	}
	if !r.found {
		return corrupt("block group %d uses bitmaps but has no bitmap %v", r.g.start, r.k)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
