package extent

import (
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/extent/delayedref"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Root is what reference updates need to know of the tree doing them.
type Root struct {
	ID ondisk.ObjectID
	// Shareable: a subvolume tree, whose blocks snapshots may share.
	Shareable bool
	// LastSnapshot is the generation of the last snapshot taken of the tree
	// (root_item.last_snapshot); blocks no newer may be shared.
	LastSnapshot ondisk.Generation
}

// Shareable reports whether blocks of tree id can be shared by snapshots.
// mirrors test_bit(BTRFS_ROOT_SHAREABLE)
func Shareable(id ondisk.ObjectID) bool {
	return id == ondisk.FSTreeObjectID || id == ondisk.DataRelocTreeObjectID || id == ondisk.TreeRelocObjectID ||
		id >= ondisk.FirstFreeObjectID && id <= ondisk.LastFreeObjectID
}

// ModRefs queues count (+1 or -1) for every reference buf holds: to its
// children for a node, to the data extents of its file extent items for a
// leaf. The references are shared (parent = buf) when full, else by buf's
// owner tree. mirrors __btrfs_mod_ref (btrfs_inc_ref / btrfs_dec_ref)
func (m *Manager) ModRefs(root Root, buf *diskio.Node, full bool, count int) error {
	refRoot := buf.Owner()
	level := buf.Level()
	if !root.Shareable && level == 0 {
		return nil
	}
	var parent ondisk.LogicalAddr
	if full {
		parent = buf.Addr
	}
	for i := 0; i < buf.NumItems(); i++ {
		if level > 0 {
			kp := buf.KeyPtr(i)
			if err := m.Refs.Add(kp.BlockPtr, uint64(m.NodeSize), level-1, delayedref.TreeRef(refRoot, parent), count); err != nil {
				return err
			}
			continue
		}
		k := buf.Key(i)
		if k.Type != ondisk.ExtentDataKey {
			continue
		}
		fi, err := item.DecodeFileExtentItem(buf.ItemData(i))
		if err != nil {
			return corrupt("leaf %d slot %d: %w", uint64(buf.Addr), i, err)
		}
		if fi.Type == item.FileExtentInline || fi.DiskBytenr == 0 {
			continue
		}
		ref := delayedref.DataRef(refRoot, k.ObjectID, k.Offset-fi.Offset, parent)
		if err := m.Refs.Add(fi.DiskBytenr, fi.DiskNumBytes, 0, ref, count); err != nil {
			return err
		}
	}
	return nil
}

// canBeShared mirrors btrfs_block_can_be_shared: roots are never shared,
// nor blocks of trees that are never snapshotted, nor blocks written since
// the last snapshot.
func canBeShared(root Root, buf *diskio.Node, isRoot bool) bool {
	if !root.Shareable || isRoot {
		return false
	}
	reloc := buf.Header().Flags&ondisk.HeaderFlagReloc != 0
	return buf.Generation() <= root.LastSnapshot || reloc
}

// UpdateRefForCow fixes the references when tree root COWs buf into cow:
// if buf is shared, the references buf's children have from buf's owner
// become shared ones from buf (FULL_BACKREF) or the copy gets its own; if it
// is not, references held through FULL_BACKREF move to the copy. lastRef
// tells whether root held the last reference to buf (its extent is then
// freed by the caller's drop). mirrors update_ref_for_cow
func (m *Manager) UpdateRefForCow(tr Trees, root Root, buf, cow *diskio.Node, isRoot bool) (lastRef bool, err error) {
	var refs, flags uint64
	if canBeShared(root, buf, isRoot) {
		refs, flags, err = m.LookupInfo(tr, buf.Addr)
		if err != nil {
			return false, err
		}
		if refs == 0 {
			return false, corrupt("cow of tree block %d (tree %d): it has no references", uint64(buf.Addr), root.ID)
		}
	} else {
		refs = 1
		if buf.Header().BackrefRev < ondisk.MixedBackrefRev {
			flags = BlockFlagFullBackref
		}
	}
	owner := buf.Owner()
	if refs > 1 {
		if owner == root.ID && flags&BlockFlagFullBackref == 0 {
			if err := m.ModRefs(root, buf, true, 1); err != nil {
				return false, err
			}
			return false, m.Refs.SetFlags(buf.Addr, uint64(m.NodeSize), buf.Level(), false, BlockFlagFullBackref)
		}
		return false, m.ModRefs(root, cow, false, 1)
	}
	if flags&BlockFlagFullBackref != 0 {
		if err := m.ModRefs(root, cow, false, 1); err != nil {
			return false, err
		}
		if err := m.ModRefs(root, buf, true, -1); err != nil {
			return false, err
		}
	}
	return true, nil
}

// BlockFlagFullBackref is BTRFS_BLOCK_FLAG_FULL_BACKREF: the block's
// children are referenced by its address.
const BlockFlagFullBackref = item.BlockFlagFullBackref
