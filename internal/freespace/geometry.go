package freespace

import (
	"fmt"
	"math/bits"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// geom is a block group seen by the free space tree: its range, its sector
// size and its bitmap windows (the ranges one bitmap item covers, aligned to
// the group's start).
type geom struct {
	start, end uint64
	sector     uint64
	shift      uint   // log2(sector)
	rng        uint64 // bytes per window: sector * BitmapBits
	windows    int
	high, low  uint32
}

func newGeom(bg BlockGroup, sectorSize uint32) (*geom, error) {
	s := uint64(sectorSize)
	if s < 512 || s > 65536 || s&(s-1) != 0 {
		return nil, fmt.Errorf("invalid sector size %d", sectorSize)
	}
	start, length := uint64(bg.Start), bg.Length
	if length == 0 || start%s != 0 || length%s != 0 || start+length < start {
		return nil, fmt.Errorf("invalid block group %d+%d for sector size %d", start, length, s)
	}
	g := &geom{start: start, end: start + length, sector: s, shift: uint(bits.TrailingZeros64(s)), rng: s * BitmapBits}
	g.windows = int((length + g.rng - 1) / g.rng)
	g.high, g.low = Thresholds(length, sectorSize)
	return g, nil
}

// checkRange validates [start, start+length) as a range of the group.
func (g *geom) checkRange(start ondisk.LogicalAddr, length uint64) (uint64, uint64, error) {
	s := uint64(start)
	e := s + length
	if length == 0 || e < s || s < g.start || e > g.end {
		return 0, 0, fmt.Errorf("range outside block group %d+%d", g.start, g.end-g.start)
	}
	if s%g.sector != 0 || length%g.sector != 0 {
		return 0, 0, fmt.Errorf("range not aligned to sector size %d", g.sector)
	}
	return s, e, nil
}

// window returns the range of window w.
func (g *geom) window(w int) (ws, we uint64) {
	ws = g.start + uint64(w)*g.rng
	return ws, min(ws+g.rng, g.end)
}

// windowOf returns the window holding addr.
func (g *geom) windowOf(addr uint64) int { return int((addr - g.start) / g.rng) }

// boundary reports whether addr is the start of a window other than the
// first, and which.
func (g *geom) boundary(addr uint64) (int, bool) {
	if addr <= g.start || addr >= g.end || (addr-g.start)%g.rng != 0 {
		return 0, false
	}
	return g.windowOf(addr), true
}

// sectors converts a byte count to sectors.
func (g *geom) sectors(n uint64) uint64 { return n >> g.shift }

// bitmapBytes is the data size of a bitmap covering n bytes.
// mirrors free_space_bitmap_size
func (g *geom) bitmapBytes(n uint64) int { return int((g.sectors(n) + 7) / 8) }

// bitmapKey is the key of window w's bitmap item.
func (g *geom) bitmapKey(w int) ondisk.Key {
	ws, we := g.window(w)
	return BitmapKey(ws, we-ws)
}

// dataSize is the data size of window w's bitmap item.
func (g *geom) dataSize(w int) int {
	ws, we := g.window(w)
	return g.bitmapBytes(we - ws)
}

// groupKeys is the key range holding the group's extent and bitmap records
// (the info item sorts just before it).
func (g *geom) groupKeys() (min, max ondisk.Key) {
	return ondisk.Key{ObjectID: ondisk.ObjectID(g.start), Type: ondisk.FreeSpaceExtentKey},
		ondisk.Key{ObjectID: ondisk.ObjectID(g.end - 1), Type: 0xff, Offset: ^uint64(0)}
}

func (g *geom) bg() BlockGroup {
	return BlockGroup{Start: ondisk.LogicalAddr(g.start), Length: g.end - g.start}
}
