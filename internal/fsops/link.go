package fsops

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// addLink gives the object e.Location the name e.Name in dir: a new dir
// index, the back reference (INODE_REF/EXTREF, or ROOT_REF/BACKREF for a
// subvolume), DIR_ITEM and DIR_INDEX, and the directory's size and times.
// e.Index is set. mirrors btrfs_add_link
func (o *op) addLink(dir ondisk.InodeRef, dx *item.InodeItem, e *Entry) error {
	idx, err := o.nextDirIndex(dir)
	if err != nil {
		return err
	}
	e.Index = idx
	if e.IsSubvol() {
		err = o.addRootRef(dir.Root, e.Location.ObjectID, dir.Ino, idx, e.Name)
	} else {
		err = o.addInodeRef(dir.Root, e.Location.ObjectID, dir.Ino, e.Name, idx)
	}
	if err != nil {
		return err
	}
	if err := o.insertDirEntries(dir, e); err != nil {
		return err
	}
	dx.Size += 2 * uint64(len(e.Name))
	o.touch(dx, true)
	return o.putInode(dir, dx)
}

// removeLink deletes the name from dir and its back reference, and updates
// the directory; it returns what the name pointed to. The target inode is
// left to the caller. mirrors __btrfs_unlink_inode and btrfs_unlink_subvol
func (o *op) removeLink(dir ondisk.InodeRef, dx *item.InodeItem, name string) (*Entry, error) {
	e, err := o.lookupEntry(dir, name)
	if err != nil {
		return nil, err
	}
	if e.IsSubvol() {
		e.Index, err = o.delRootRef(dir.Root, e.Location.ObjectID, dir.Ino, name)
	} else {
		e.Index, err = o.delInodeRef(dir.Root, e.Location.ObjectID, dir.Ino, name)
	}
	if err != nil {
		return nil, err
	}
	if err := o.deleteDirEntries(dir, name, e.Index); err != nil {
		return nil, err
	}
	sub := 2 * uint64(len(name))
	if dx.Size < sub {
		return nil, corruptf("directory %v: size %d smaller than its names", dir, dx.Size)
	}
	dx.Size -= sub
	o.touch(dx, true)
	return e, o.putInode(dir, dx)
}

// dropLink takes one link from an inode after removeLink, deleting the inode
// when none is left (directories have exactly one). mirrors btrfs_drop_nlink
// and btrfs_evict_inode
func (o *op) dropLink(id ondisk.InodeRef, x *item.InodeItem) error {
	if x.NLink > 0 {
		x.NLink--
	}
	if x.NLink == 0 || isDir(x.Mode) {
		if kept, err := o.keepOrphan(id, x); kept || err != nil {
			return err // still open: deleted by its last close (orphan.go)
		}
		return o.deleteInode(id)
	}
	o.touch(x, false)
	return o.putInode(id, x)
}

// dropLinkItems is the reservation for dropLink beyond the name itself:
// when the inode goes, the leaves holding its items change.
func (o *op) dropLinkItems(id ondisk.InodeRef, x *item.InodeItem) (int, error) {
	if x.NLink > 1 && !isDir(x.Mode) {
		return 0, nil
	}
	t, err := o.tree(id.Root)
	if err != nil {
		return 0, err
	}
	n := 0
	err = t.Range(ondisk.Key{ObjectID: id.Ino}, ondisk.Key{ObjectID: id.Ino, Type: 0xff, Offset: ^uint64(0)},
		func(ondisk.Key, []byte) bool { n++; return true })
	if err != nil {
		return 0, fmt.Errorf("items of inode %v: %w", id, err)
	}
	return manyItems(n), nil
}

// deleteInode removes every item of an inode, dropping the references of its
// data extents. mirrors btrfs_truncate_inode_items(0) + btrfs_evict_inode
func (o *op) deleteInode(id ondisk.InodeRef) error {
	if err := o.noteIno(id.Root); err != nil {
		return err
	}
	if _, err := o.dropExtents(id, 0, ^uint64(0)); err != nil {
		return err
	}
	t, err := o.tree(id.Root)
	if err != nil {
		return err
	}
	o.touched(id)
	min := ondisk.Key{ObjectID: id.Ino}
	max := ondisk.Key{ObjectID: id.Ino, Type: 0xff, Offset: ^uint64(0)}
	if err := t.DeleteRange(o.a, min, max); err != nil {
		return fmt.Errorf("delete inode %v: %w", id, err)
	}
	delete(o.f.nextIndex, id)
	return nil
}
