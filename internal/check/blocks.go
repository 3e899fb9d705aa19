package check

import (
	"encoding/binary"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

var le = binary.LittleEndian

// checkBlock checks what the block reader does not: generation against the
// superblock, owner, empty leaves, key types that belong elsewhere; and
// counts the block in the summary.
func (c *checker) checkBlock(w *walker, n *diskio.Node, isRoot bool) {
	ri := w.ri
	limit := c.sb.Generation
	if w.kind == kindLog {
		limit++ // log blocks belong to the transaction after the committed one
	}
	if g := n.Generation(); g > limit {
		c.problem(ClassTree, ri.id, n.Addr, nil, "generation %d is newer than the superblock's %d", g, limit)
	}
	owner := n.Owner()
	switch w.kind {
	case kindFS:
		if !isFSTree(owner) && owner != ondisk.TreeRelocObjectID {
			c.problem(ClassTree, ri.id, n.Addr, nil, "owner %s is not a subvolume tree", ondisk.TreeName(owner))
		}
	case kindLog:
		if owner != ondisk.TreeLogObjectID {
			c.problem(ClassTree, ri.id, n.Addr, nil, "owner %s, expected TREE_LOG", ondisk.TreeName(owner))
		}
	default:
		if owner != ri.id {
			c.problem(ClassTree, ri.id, n.Addr, nil, "owner %s, expected %s", ondisk.TreeName(owner), ondisk.TreeName(ri.id))
		}
	}
	nr := n.NumItems()
	if n.IsLeaf() && nr == 0 && !isRoot {
		c.problem(ClassTree, ri.id, n.Addr, nil, "empty leaf that is not a tree root")
	}
	if w.kind != kindLog {
		c.rep.TreeBytes += c.nodesize
		if isFSTree(owner) {
			c.rep.FSTreeBytes += c.nodesize
		}
		if owner == ondisk.ExtentTreeObjectID {
			c.rep.ExtentTreeBytes += c.nodesize
		}
		if n.IsLeaf() {
			c.rep.BtreeSpaceWaste += uint64(max(n.LeafFreeSpace(), 0))
		} else {
			c.rep.BtreeSpaceWaste += uint64(max(diskio.MaxKeyPtrs(uint32(c.nodesize))-nr, 0) * ondisk.KeyPtrSize)
		}
		if n.IsLeaf() {
			c.checkKeyTypes(w, n)
		}
	}
}

// checkKeyTypes flags items whose type can only live in another tree.
// mirrors check_type_with_root
func (c *checker) checkKeyTypes(w *walker, n *diskio.Node) {
	owner := n.Owner()
	bgTree := c.fi.BlockGroupTreeID()
	for i := 0; i < n.NumItems(); i++ {
		k := n.Key(i)
		var want ondisk.ObjectID
		switch k.Type {
		case ondisk.DevItemKey, ondisk.ChunkItemKey:
			want = ondisk.ChunkTreeObjectID
		case ondisk.ExtentItemKey, ondisk.MetadataItemKey:
			want = ondisk.ExtentTreeObjectID
		case ondisk.BlockGroupItemKey:
			want = bgTree
		case ondisk.RootItemKey:
			want = ondisk.RootTreeObjectID
		case ondisk.DevExtentKey:
			want = ondisk.DevTreeObjectID
		default:
			continue
		}
		if owner != want {
			c.problem(ClassTree, w.ri.id, n.Addr, keyp(k), "%s item in a block of %s (belongs in %s)",
				k.Type, ondisk.TreeName(owner), ondisk.TreeName(want))
		}
	}
}

// fullBackref reports whether the block at addr references its children
// and data by parent (FULL_BACKREF in its extent item); only subvolume and
// reloc trees use that mode.
func (c *checker) fullBackref(w *walker, addr ondisk.LogicalAddr) bool {
	if w.kind != kindFS {
		return false
	}
	if i := c.ext.find(uint64(addr)); i >= 0 {
		return c.ext.recs[i].flags&item.BlockFlagFullBackref != 0
	}
	return false
}

// emitRootRef records the reference a ROOT_ITEM (or the superblock) makes
// to a root block; n is the block, or nil when it could not be read.
func (c *checker) emitRootRef(w *walker, n *diskio.Node) {
	ri := w.ri
	src := refSrc{tree: ondisk.RootTreeObjectID, block: ri.leaf, key: ri.key}
	if ri.item == nil {
		src = refSrc{} // the superblock
	}
	if ri.id == ondisk.TreeRelocObjectID || n != nil && n.Header().BackrefRev < ondisk.MixedBackrefRev {
		c.addTreeRef(ri.bytenr, ondisk.SharedBlockRefKey, uint64(ri.bytenr), src)
		return
	}
	c.addTreeRef(ri.bytenr, ondisk.TreeBlockRefKey, uint64(ri.id), src)
}

// emitTreeRef records the reference slot i of node n makes to its child.
func (c *checker) emitTreeRef(w *walker, n *diskio.Node, i int, kp ondisk.KeyPtr) {
	src := refSrc{tree: w.ri.id, block: n.Addr, key: kp.Key}
	if c.fullBackref(w, n.Addr) {
		c.addTreeRef(kp.BlockPtr, ondisk.SharedBlockRefKey, uint64(n.Addr), src)
		return
	}
	c.addTreeRef(kp.BlockPtr, ondisk.TreeBlockRefKey, uint64(n.Owner()), src)
}

// emitDataRefs records the references the file extent items of a leaf make
// to data extents.
func (c *checker) emitDataRefs(w *walker, n *diskio.Node) {
	full := c.fullBackref(w, n.Addr)
	for i := 0; i < n.NumItems(); i++ {
		it := n.Item(i)
		if it.Key.Type != ondisk.ExtentDataKey {
			continue
		}
		d := n.ItemData(i)
		if len(d) < item.FileExtentItemSize || d[20] == item.FileExtentInline {
			continue // the inode pass reports bad sizes
		}
		disk := le.Uint64(d[21:])
		if disk == 0 {
			continue // a hole
		}
		diskLen, off, num := le.Uint64(d[29:]), le.Uint64(d[37:]), le.Uint64(d[45:])
		c.rep.DataBytesAlloc += diskLen
		c.rep.DataBytesRef += num
		src := refSrc{tree: w.ri.id, block: n.Addr, key: it.Key, data: true}
		if full {
			c.addDataRef(disk, diskLen, ondisk.SharedDataRefKey, uint64(n.Addr), 0, 0, src)
		} else {
			c.addDataRef(disk, diskLen, ondisk.ExtentDataRefKey, uint64(n.Owner()), uint64(it.Key.ObjectID), it.Key.Offset-off, src)
		}
	}
}
