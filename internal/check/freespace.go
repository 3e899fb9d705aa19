package check

import (
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// fsGroup is a FREE_SPACE_INFO with the free space its records describe.
type fsGroup struct {
	start, length uint64
	key           ondisk.Key
	leaf          ondisk.LogicalAddr
	extentCount   uint32
	flags         uint32
	free          rangeList // free ranges, merged
	nExtents      int       // FREE_SPACE_EXTENT records
	nBitmaps      int       // FREE_SPACE_BITMAP records
}

func (g *fsGroup) end() uint64 { return g.start + g.length }

// freeSpaceState collects the free space tree, group by group.
type freeSpaceState struct {
	groups []*fsGroup
	cur    *fsGroup
}

func newFreeSpaceState() *freeSpaceState { return &freeSpaceState{} }

func (s *freeSpaceState) finish() {
	sort.SliceStable(s.groups, func(i, j int) bool { return s.groups[i].start < s.groups[j].start })
}

// freeSpaceLeaf reads the records of a free space tree leaf. Records
// follow their FREE_SPACE_INFO in key order.
func (c *checker) freeSpaceLeaf(n *diskio.Node, fresh bool) {
	s := c.fst
	for i := 0; i < n.NumItems(); i++ {
		k := n.Key(i)
		d := n.ItemData(i)
		bad := func(format string, args ...any) {
			c.problem(ClassFreeSpace, ondisk.FreeSpaceTreeObjectID, n.Addr, keyp(k), format, args...)
		}
		start, end := uint64(k.ObjectID), uint64(k.ObjectID)+k.Offset
		switch k.Type {
		case ondisk.FreeSpaceInfoKey:
			x, err := item.DecodeFreeSpaceInfo(d)
			if err != nil {
				bad("%v", err)
				s.cur = nil
				continue
			}
			s.cur = &fsGroup{start: start, length: k.Offset, key: k, leaf: n.Addr, extentCount: x.ExtentCount, flags: x.Flags}
			s.groups = append(s.groups, s.cur)
			if x.Flags&^item.FreeSpaceUsingBitmaps != 0 {
				bad("unknown FREE_SPACE_INFO flags %#x", x.Flags)
			}
		case ondisk.FreeSpaceExtentKey, ondisk.FreeSpaceBitmapKey:
			g := s.cur
			if g == nil || start < g.start || end > g.end() || end <= start {
				bad("free space record [%d, %d) outside the block group of the preceding FREE_SPACE_INFO", start, end)
				continue
			}
			if start%c.sectorsize != 0 || k.Offset%c.sectorsize != 0 {
				bad("free space record [%d, %d) not aligned to sectorsize %d", start, end, c.sectorsize)
			}
			if n := len(g.free); n > 0 && g.free[n-1].end > start {
				bad("free space record [%d, %d) overlaps the previous one", start, end)
			}
			bitmaps := g.flags&item.FreeSpaceUsingBitmaps != 0
			if k.Type == ondisk.FreeSpaceExtentKey {
				g.nExtents++
				if bitmaps {
					bad("FREE_SPACE_EXTENT in a block group whose FREE_SPACE_INFO says bitmaps")
				}
				g.free.appendMerged(rng{start, end})
				continue
			}
			g.nBitmaps++
			if !bitmaps {
				bad("FREE_SPACE_BITMAP in a block group whose FREE_SPACE_INFO says extents")
			}
			nbits := k.Offset / c.sectorsize
			if uint64(len(d)) != (nbits+7)/8 {
				bad("bitmap of %d bytes for %d sectors", len(d), nbits)
				continue
			}
			bitmapRuns(d, nbits, start, c.sectorsize, &g.free)
		default:
			bad("unexpected %s item in the free space tree", k.Type)
		}
	}
}

// bitmapRuns appends the free runs of a bitmap (bit set = sector free,
// least significant bit first) starting at logical start.
func bitmapRuns(b []byte, nbits, start, sector uint64, out *rangeList) {
	var i uint64
	for i < nbits {
		byteI := i / 8
		if i%8 == 0 && byteI < uint64(len(b)) && b[byteI] == 0 {
			i += 8
			continue
		}
		if b[byteI]&(1<<(i%8)) == 0 {
			i++
			continue
		}
		j := i
		for j < nbits {
			bj := j / 8
			if j%8 == 0 && b[bj] == 0xff && j+8 <= nbits {
				j += 8
				continue
			}
			if b[bj]&(1<<(j%8)) == 0 {
				break
			}
			j++
		}
		out.appendMerged(rng{start + i*sector, start + j*sector})
		i = j
	}
}

// checkFreeSpace compares the free space tree with the block groups minus
// their extent items. Superblock mirror stripes may be recorded either way.
// mirrors check_space_cache / verify_space_cache for the free space tree
func (c *checker) checkFreeSpace() {
	enabled := c.sb.CompatROFlags&ondisk.CompatROFreeSpaceTree != 0
	if !enabled {
		if c.fst != nil {
			c.rep.warn("a free space tree exists but the FREE_SPACE_TREE feature is off")
		}
		return
	}
	if c.sb.CompatROFlags&ondisk.CompatROFreeSpaceTreeValid == 0 {
		c.problem(ClassSuper, 0, 0, nil, "FREE_SPACE_TREE feature without FREE_SPACE_TREE_VALID")
	}
	if c.fst == nil {
		c.problem(ClassFreeSpace, ondisk.FreeSpaceTreeObjectID, 0, nil, "FREE_SPACE_TREE feature is on but there is no free space tree")
		return
	}
	byStart := map[uint64]*fsGroup{}
	for _, g := range c.fst.groups {
		if byStart[g.start] != nil {
			c.problem(ClassFreeSpace, ondisk.FreeSpaceTreeObjectID, g.leaf, keyp(g.key), "second FREE_SPACE_INFO for %d", g.start)
			continue
		}
		byStart[g.start] = g
	}
	for i := range c.bgs {
		bg := &c.bgs[i]
		g := byStart[bg.start]
		if g == nil {
			c.problem(ClassFreeSpace, ondisk.FreeSpaceTreeObjectID, 0, keyp(ondisk.Key{ObjectID: ondisk.ObjectID(bg.start), Type: ondisk.FreeSpaceInfoKey, Offset: bg.length}),
				"block group [%d, %d) has no FREE_SPACE_INFO", bg.start, bg.end())
			continue
		}
		delete(byStart, bg.start)
		if g.length != bg.length {
			c.problem(ClassFreeSpace, ondisk.FreeSpaceTreeObjectID, g.leaf, keyp(g.key), "FREE_SPACE_INFO length %d, block group length %d", g.length, bg.length)
			continue
		}
		c.checkFreeSpaceGroup(bg, g)
	}
	for _, g := range c.fst.groups {
		if byStart[g.start] != g {
			continue
		}
		switch {
		case c.overlapsBG(g.start, g.end()):
			c.problem(ClassFreeSpace, ondisk.FreeSpaceTreeObjectID, g.leaf, keyp(g.key), "FREE_SPACE_INFO for [%d, %d), which is not a block group but overlaps one", g.start, g.end())
		case c.mkfsLeftover(g):
			c.rep.warn("free space tree: FREE_SPACE_INFO %v for [%d, %d), below the first block group, where no block group exists: "+
				"harmless, a leftover of the temporary chunks mkfs.btrfs 6.2 and older create and delete; the kernel never reads it "+
				"(btrfs check after 6.2 reports it, btrfs check --clear-space-cache v2 removes it)", g.key, g.start, g.end())
		default:
			// mirrors check_free_space_tree (btrfs-progs clear-cache.c)
			c.problem(ClassFreeSpace, ondisk.FreeSpaceTreeObjectID, g.leaf, keyp(g.key), "FREE_SPACE_INFO for [%d, %d), where there is no block group", g.start, g.end())
		}
	}
}

func (c *checker) checkFreeSpaceGroup(bg *blockGroup, g *fsGroup) {
	bad := func(format string, args ...any) {
		c.problem(ClassFreeSpace, ondisk.FreeSpaceTreeObjectID, g.leaf, keyp(g.key), format, args...)
	}
	count := g.nExtents
	if g.flags&item.FreeSpaceUsingBitmaps != 0 {
		count = len(g.free)
	}
	if uint64(count) != uint64(g.extentCount) {
		bad("extent_count %d but the records hold %d free extents", g.extentCount, count)
	}
	want := c.expectedFree(bg)
	excl := c.superStripes(bg)
	onlyTree := g.free.subtract(want).subtract(excl)
	onlyWant := want.subtract(g.free).subtract(excl)
	report := func(rs rangeList, format string) {
		for i, r := range rs {
			if i == 3 {
				bad("... and %d more such ranges", len(rs)-i)
				return
			}
			bad(format, r.start, r.end)
		}
	}
	report(onlyTree, "[%d, %d) is recorded free but extent items use it")
	report(onlyWant, "[%d, %d) is not used by any extent item but is not recorded free")
}

// expectedFree is a block group minus its extent items.
func (c *checker) expectedFree(bg *blockGroup) rangeList {
	recs := c.ext.recs
	i := sort.Search(len(recs), func(i int) bool { return recs[i].end() > bg.start })
	var used rangeList
	for ; i < len(recs) && recs[i].start < bg.end(); i++ {
		used.appendMerged(rng{max(recs[i].start, bg.start), min(recs[i].end(), bg.end())})
	}
	return rangeList{{bg.start, bg.end()}}.subtract(used)
}

// superStripes are the logical ranges of bg that hold superblock copies.
// mirrors exclude_super_stripes and btrfs_rmap_block
func (c *checker) superStripes(bg *blockGroup) rangeList {
	var out rangeList
	const stripe = 64 << 10
	if bg.start < uint64(ondisk.SuperMirrorOffsets[0]) {
		out = append(out, rng{bg.start, uint64(ondisk.SuperMirrorOffsets[0])})
	}
	m, ok := c.fi.Chunks.Lookup(ondisk.LogicalAddr(bg.start))
	if !ok {
		return out
	}
	ch := &m.Chunk
	slen := stripeLength(ch)
	profile := ch.Type & ondisk.BlockGroupProfileMask
	for _, sb := range ondisk.SuperMirrorOffsets {
		phys := uint64(sb)
		for i, s := range ch.Stripes {
			if phys < uint64(s.Offset) || phys >= uint64(s.Offset)+slen {
				continue
			}
			nr := (phys - uint64(s.Offset)) / stripe
			inStripe := (phys - uint64(s.Offset)) % stripe
			switch profile {
			case ondisk.BlockGroupRaid0:
				nr = nr*uint64(len(ch.Stripes)) + uint64(i)
			case ondisk.BlockGroupRaid10:
				nr = (nr*uint64(len(ch.Stripes)) + uint64(i)) / uint64(max(ch.SubStripes, 1))
			case ondisk.BlockGroupRaid5, ondisk.BlockGroupRaid6:
				continue
			}
			lo := uint64(m.Logical) + nr*stripe
			out = append(out, rng{lo, lo + inStripe + stripe})
		}
	}
	return out.normalize()
}

// mkfsLeftover reports whether a FREE_SPACE_INFO without a block group is
// what mkfs.btrfs 6.2 leaves behind for a temporary chunk it deleted: below
// every block group, and all free (its chunk held nothing when deleted).
func (c *checker) mkfsLeftover(g *fsGroup) bool {
	if len(c.bgs) == 0 || g.end() > c.bgs[0].start || g.length == 0 {
		return false
	}
	return len(g.free) == 1 && g.free[0] == rng{g.start, g.end()}
}

// overlapsBG reports whether any block group overlaps [start, end).
func (c *checker) overlapsBG(start, end uint64) bool {
	i := sort.Search(len(c.bgs), func(i int) bool { return c.bgs[i].end() > start })
	return i < len(c.bgs) && c.bgs[i].start < end
}
