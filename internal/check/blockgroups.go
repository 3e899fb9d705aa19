package check

import (
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// blockGroup is a BLOCK_GROUP_ITEM and the space its extents really use.
type blockGroup struct {
	start, length uint64
	used, flags   uint64
	key           ondisk.Key
	tree          ondisk.ObjectID // extent tree or block group tree
	leaf          ondisk.LogicalAddr
	actual        uint64 // sum of the sizes of the extent items inside
}

func (bg *blockGroup) end() uint64 { return bg.start + bg.length }

// blockGroupItem records a BLOCK_GROUP_ITEM of the extent or block group tree.
func (c *checker) blockGroupItem(tree ondisk.ObjectID, n *diskio.Node, k ondisk.Key, d []byte) {
	bad := func(format string, args ...any) {
		c.problem(ClassBlockGroup, tree, n.Addr, keyp(k), format, args...)
	}
	x, err := item.DecodeBlockGroupItem(d)
	if err != nil {
		bad("%v", err)
		return
	}
	if x.ChunkObjectID != ondisk.FirstChunkTreeObjectID {
		bad("chunk_objectid %d, expected %d", x.ChunkObjectID, ondisk.FirstChunkTreeObjectID)
	}
	if k.Offset == 0 {
		bad("block group of length 0")
		return
	}
	if t := x.Flags & ondisk.BlockGroupTypeMask; t == 0 {
		bad("block group flags %#x have no type", x.Flags)
	}
	if x.Used > k.Offset {
		bad("used %d exceeds the length %d", x.Used, k.Offset)
	}
	c.bgs = append(c.bgs, blockGroup{start: uint64(k.ObjectID), length: k.Offset, used: x.Used, flags: x.Flags,
		key: k, tree: tree, leaf: n.Addr})
}

// findBG returns the index of the block group containing logical, or -1.
func (c *checker) findBG(logical uint64) int {
	i := sort.Search(len(c.bgs), func(i int) bool { return c.bgs[i].start > logical }) - 1
	if i >= 0 && logical < c.bgs[i].end() {
		return i
	}
	return -1
}

// checkBlockGroups places every extent item in its block group, checks its
// type, and compares each group's used with what its extents add up to.
// mirrors check_block_groups and check_extent_type
func (c *checker) checkBlockGroups() {
	sort.SliceStable(c.bgs, func(i, j int) bool { return c.bgs[i].start < c.bgs[j].start })
	for i := 1; i < len(c.bgs); i++ {
		if p, b := &c.bgs[i-1], &c.bgs[i]; b.start < p.end() {
			c.problem(ClassBlockGroup, b.tree, b.leaf, keyp(b.key), "overlaps block group [%d, %d)", p.start, p.end())
		}
	}
	var total uint64
	j := 0
	for i := range c.ext.recs {
		e := &c.ext.recs[i]
		total += e.length
		for j < len(c.bgs) && c.bgs[j].end() <= e.start {
			j++
		}
		if j >= len(c.bgs) || c.bgs[j].start > e.start {
			c.problem(ClassBlockGroup, ondisk.ExtentTreeObjectID, e.leaf, keyp(e.key), "extent [%d, %d) is not in any block group", e.start, e.end())
			continue
		}
		bg := &c.bgs[j]
		bg.actual += e.length
		if e.end() > bg.end() {
			c.problem(ClassBlockGroup, ondisk.ExtentTreeObjectID, e.leaf, keyp(e.key), "extent [%d, %d) crosses the end of block group [%d, %d)",
				e.start, e.end(), bg.start, bg.end())
		}
		if want := c.extentBGType(e); bg.flags&want == 0 {
			c.problem(ClassBlockGroup, ondisk.ExtentTreeObjectID, e.leaf, keyp(e.key), "extent [%d, %d) lies in a %s block group [%d, %d), expected %s",
				e.start, e.end(), bgTypeName(bg.flags), bg.start, bg.end(), bgTypeName(want))
		}
	}
	c.rep.BytesUsed = total
	var sum uint64
	for i := range c.bgs {
		bg := &c.bgs[i]
		sum += bg.actual
		if bg.used != bg.actual {
			c.problem(ClassBlockGroup, bg.tree, bg.leaf, keyp(bg.key), "used %d but the extent items in it add up to %d", bg.used, bg.actual)
		}
	}
	if sum != c.sb.BytesUsed {
		c.problem(ClassSuper, 0, 0, nil, "bytes_used %d but the block groups' extent items add up to %d", c.sb.BytesUsed, sum)
	}
}

// extentBGType is the block group type an extent must lie in: data,
// system (chunk tree blocks) or metadata.
func (c *checker) extentBGType(e *extentRec) uint64 {
	if !e.metadata {
		return ondisk.BlockGroupData
	}
	owner := ondisk.ObjectID(0)
	if bi, ok := c.blocks[ondisk.LogicalAddr(e.start)]; ok {
		owner = bi.owner
	} else if len(e.backrefs) > 0 && e.backrefs[0].typ == ondisk.TreeBlockRefKey {
		owner = ondisk.ObjectID(e.backrefs[0].root)
	}
	if owner == ondisk.ChunkTreeObjectID {
		return ondisk.BlockGroupSystem
	}
	if owner == 0 {
		return ondisk.BlockGroupMetadata | ondisk.BlockGroupSystem
	}
	return ondisk.BlockGroupMetadata
}

func bgTypeName(flags uint64) string {
	var s string
	for _, t := range []struct {
		f uint64
		n string
	}{{ondisk.BlockGroupData, "DATA"}, {ondisk.BlockGroupSystem, "SYSTEM"}, {ondisk.BlockGroupMetadata, "METADATA"}} {
		if flags&t.f != 0 {
			if s != "" {
				s += "|"
			}
			s += t.n
		}
	}
	if s == "" {
		return "untyped"
	}
	return s
}
