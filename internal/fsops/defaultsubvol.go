package fsops

import (
	"bytes"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// SetDefaultSubvolume makes subvolume id (0 or 5: the top level) the one
// mounted by default, as the kernel does: the location of the root tree
// directory's "default" entry becomes the subvolume's ROOT_ITEM key, and
// the DEFAULT_SUBVOL incompat flag is set.
// mirrors btrfs_ioctl_default_subvol
func (f *FS) SetDefaultSubvolume(id ondisk.ObjectID) error {
	if id == 0 {
		id = ondisk.FSTreeObjectID
	}
	if id != ondisk.FSTreeObjectID && (id < ondisk.FirstFreeObjectID || id > ondisk.LastFreeObjectID) {
		return errf(syscall.EINVAL, "set default subvolume: %d is not a subvolume ID", id)
	}
	return f.run(func(o *op) error {
		if err := o.reserve(1); err != nil {
			return err
		}
		rt, err := o.tree(ondisk.RootTreeObjectID)
		if err != nil {
			return err
		}
		p, ok, err := rt.SearchBackward(ondisk.Key{ObjectID: id, Type: ondisk.RootItemKey, Offset: ^uint64(0)})
		if err != nil {
			return err
		}
		if !ok || p.Key().ObjectID != id || p.Key().Type != ondisk.RootItemKey {
			return errf(syscall.ENOENT, "set default subvolume: no subvolume %d", id)
		}
		rootKey := p.Key()
		ri, err := item.DecodeRootItem(p.Data())
		if err != nil {
			return corruptf("root item %v: %w", rootKey, err)
		}
		if ri.Refs == 0 {
			return errf(syscall.ENOENT, "set default subvolume: subvolume %d is being deleted", id)
		}
		name := []byte("default")
		key := ondisk.Key{ObjectID: ondisk.RootTreeDirObjectID, Type: ondisk.DirItemKey, Offset: item.NameHash(name)}
		data, ok, err := rt.Lookup(key)
		if err != nil {
			return err
		}
		if !ok {
			return corruptf("set default subvolume: the root tree directory has no \"default\" entry (mkfs makes one)")
		}
		dis, err := item.DecodeDirItems(data)
		if err != nil {
			return corruptf("root tree dir item %v: %w", key, err)
		}
		found := false
		for i := range dis {
			if bytes.Equal(dis[i].Name, name) {
				dis[i].Location, found = rootKey, true
			}
		}
		if !found {
			return corruptf("set default subvolume: the root tree directory has no \"default\" entry (mkfs makes one)")
		}
		if err := rt.UpdateItem(o.a, key, dis.Bytes()); err != nil {
			return err
		}
		o.h.Super().IncompatFlags |= ondisk.IncompatDefaultSubvol
		return nil
	})
}
