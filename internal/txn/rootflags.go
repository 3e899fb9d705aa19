package txn

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// SetRootFlags sets the flags of tree id's ROOT_ITEM (BTRFS_ROOT_SUBVOL_RDONLY):
// in the item this transaction writes at commit and, so that readers of the
// root tree see it at once, in the root tree now. mirrors the root item
// update of btrfs_ioctl_subvol_setflags
func (h *Handle) SetRootFlags(id ondisk.ObjectID, flags uint64) error {
	if err := h.check(); err != nil {
		return err
	}
	f := h.f
	ts, err := f.tree(id)
	if err != nil {
		return fmt.Errorf("txn: set flags of tree %s: %w", ondisk.TreeName(id), err)
	}
	if !ts.hasItem {
		return fmt.Errorf("txn: set flags of tree %s: it has no root item", ondisk.TreeName(id))
	}
	ts.item.Flags = flags
	ts.itemDirty = true
	rt, err := f.tree(ondisk.RootTreeObjectID)
	if err != nil {
		return err
	}
	if err := rt.t.UpdateItem(allocator{f}, ts.key, ts.item.Bytes()); err != nil {
		return f.abort(fmt.Errorf("set flags of tree %s: %w", ondisk.TreeName(id), err))
	}
	return nil
}
