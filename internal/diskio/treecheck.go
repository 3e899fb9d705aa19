package diskio

import (
	"slices"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// checkNode validates a tree block's structure the way the kernel's
// tree-checker does before anything uses it; the block's fsid is the
// filesystem's or one of its seeds'. mirrors btrfs_check_leaf /
// btrfs_check_node (+ check_tree_block_fsid)
func checkNode(n *Node, fsid ondisk.UUID, exp Expect, seeds ...ondisk.UUID) error {
	h := n.Header()
	if h.Bytenr != n.Addr {
		return corruptf("bytenr mismatch: header says %d", h.Bytenr)
	}
	if h.FSID != fsid && !slices.Contains(seeds, h.FSID) {
		return corruptf("fsid mismatch: block has %v, filesystem %v", h.FSID, fsid)
	}
	if h.Level >= ondisk.MaxLevel {
		return corruptf("invalid level %d", h.Level)
	}
	if exp.Level >= 0 && int(h.Level) != exp.Level {
		return corruptf("level %d, expected %d", h.Level, exp.Level)
	}
	if exp.Generation != 0 && h.Generation != exp.Generation {
		return corruptf("parent transid verify failed: wanted %d found %d", exp.Generation, h.Generation)
	}
	if h.Owner == 0 {
		return corruptf("owner is 0")
	}
	if exp.Tree != 0 && exp.Tree < ondisk.FirstFreeObjectID && exp.Tree != ondisk.FSTreeObjectID &&
		exp.Tree != ondisk.TreeLogObjectID && h.Owner != exp.Tree && h.Owner != ondisk.TreeRelocObjectID {
		return corruptf("owner %s, expected %s", ondisk.TreeName(h.Owner), ondisk.TreeName(exp.Tree))
	}
	var err error
	if h.Level == 0 {
		err = checkLeaf(n)
	} else {
		err = checkInternal(n)
	}
	if err != nil {
		return err
	}
	if exp.FirstKey != nil && n.NumItems() > 0 {
		if k := n.Key(0); k != *exp.FirstKey {
			return corruptf("first key %v, parent says %v", k, *exp.FirstKey)
		}
	}
	return nil
}

func checkLeaf(n *Node) error {
	nr := n.NumItems()
	dataSize := LeafDataSize(uint32(len(n.Data)))
	if nr*ondisk.ItemHeaderSize > dataSize {
		return corruptf("leaf has %d items, more than fit", nr)
	}
	end := dataSize
	var prev ondisk.Key
	for i := 0; i < nr; i++ {
		it := n.Item(i)
		if i > 0 && prev.Compare(it.Key) >= 0 {
			return corruptf("bad key order: slot %d %v after %v", i, it.Key, prev)
		}
		prev = it.Key
		if int(it.Offset)+int(it.Size) != end {
			return corruptf("slot %d %v: data end %d, expected %d", i, it.Key,
				int(it.Offset)+int(it.Size), end)
		}
		if int(it.Offset) < (i+1)*ondisk.ItemHeaderSize && it.Size > 0 || int(it.Offset) > dataSize {
			return corruptf("slot %d %v: data at %d overlaps item headers", i, it.Key, it.Offset)
		}
		end = int(it.Offset)
	}
	if nr > 0 && end < nr*ondisk.ItemHeaderSize {
		return corruptf("item data overlaps item headers")
	}
	return nil
}

func checkInternal(n *Node) error {
	nr := n.NumItems()
	if nr == 0 {
		return corruptf("internal node (level %d) with 0 items", n.Level())
	}
	if nr > MaxKeyPtrs(uint32(len(n.Data))) {
		return corruptf("node has %d key pointers, max %d", nr, MaxKeyPtrs(uint32(len(n.Data))))
	}
	var prev ondisk.Key
	for i := 0; i < nr; i++ {
		kp := n.KeyPtr(i)
		if kp.BlockPtr == 0 {
			return corruptf("slot %d: null block pointer", i)
		}
		if i > 0 && prev.Compare(kp.Key) >= 0 {
			return corruptf("bad key order: slot %d %v after %v", i, kp.Key, prev)
		}
		prev = kp.Key
	}
	return nil
}
