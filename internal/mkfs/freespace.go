package mkfs

import (
	"slices"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// freeSpaceItems describes the free space of block group c, whose tree
// blocks are at used, as a FREE_SPACE_INFO followed by one FREE_SPACE_EXTENT
// per free run. An empty filesystem has a run or two per block group, far
// below the kernel's bitmap threshold, so extents are all it needs.
// (internal/freespace, when it lands, can take this over.)
func freeSpaceItems(c *chunk, used []ondisk.LogicalAddr, nodesize uint32) []Item {
	used = slices.Clone(used)
	slices.Sort(used)
	var runs []Item
	pos := c.Logical
	addRun := func(end ondisk.LogicalAddr) {
		if end > pos {
			runs = append(runs, Item{Key: ondisk.Key{ObjectID: ondisk.ObjectID(pos),
				Type: ondisk.FreeSpaceExtentKey, Offset: uint64(end - pos)}})
		}
	}
	for _, a := range used {
		addRun(a)
		pos = a + ondisk.LogicalAddr(nodesize)
	}
	addRun(c.end())
	info := freeSpaceInfoItem(uint64(c.Logical), c.Length, uint32(len(runs)))
	return append([]Item{info}, runs...)
}
