package fsops

import (
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// linkMax is BTRFS_LINK_MAX.
const linkMax = 65535

func isDir(mode uint32) bool { return mode&item.SIFMT == item.SIFDIR }
func isReg(mode uint32) bool { return mode&item.SIFMT == item.SIFREG }
func isLnk(mode uint32) bool { return mode&item.SIFMT == item.SIFLNK }

func inodeKey(ino ondisk.ObjectID) ondisk.Key {
	return ondisk.Key{ObjectID: ino, Type: ondisk.InodeItemKey}
}

// inode reads the inode item of id; ENOENT if there is none.
func (o *op) inode(id ondisk.InodeRef) (*item.InodeItem, error) {
	t, err := o.tree(id.Root)
	if err != nil {
		if isNotExist(err) {
			return nil, errf(syscall.ENOENT, "inode %v", id)
		}
		return nil, err
	}
	data, ok, err := t.Lookup(inodeKey(id.Ino))
	if err != nil {
		return nil, fmt.Errorf("read inode %v: %w", id, err)
	}
	if !ok {
		return nil, errf(syscall.ENOENT, "inode %v", id)
	}
	x, err := item.DecodeInodeItem(data)
	if err != nil {
		return nil, corruptf("inode %v: %w", id, err)
	}
	return &x, nil
}

// putInode writes the inode item back. mirrors btrfs_update_inode
func (o *op) putInode(id ondisk.InodeRef, x *item.InodeItem) error {
	t, err := o.tree(id.Root)
	if err != nil {
		return err
	}
	o.touched(id)
	if err := t.UpdateItem(o.a, inodeKey(id.Ino), x.Bytes()); err != nil {
		return fmt.Errorf("update inode %v: %w", id, err)
	}
	return nil
}

// touch marks an inode changed in this transaction: transid, sequence, and
// ctime (and mtime when data or entries changed).
func (o *op) touch(x *item.InodeItem, mtime bool) {
	x.Transid = o.transid
	x.Sequence++
	x.Ctime = o.now
	if mtime {
		x.Mtime = o.now
	}
}

// allocIno returns a free inode number in tree root: one past the highest
// object ID in the tree, at least 257. mirrors btrfs_get_free_objectid
func (o *op) allocIno(root ondisk.ObjectID) (ondisk.ObjectID, error) {
	if err := o.noteIno(root); err != nil {
		return 0, err
	}
	next := o.f.nextIno[root]
	if next >= ondisk.LastFreeObjectID {
		return 0, errf(syscall.ENOSPC, "tree %d: no free inode numbers", root)
	}
	o.f.nextIno[root] = next + 1
	return next, nil
}

// noteIno makes sure the next free inode number of tree root is known.
// Called before an inode is deleted too, so a new inode never gets the
// number of one the last commit has (the kernel reads the highest number
// when it reads the tree; the log tree's replay relies on that).
// mirrors btrfs_init_root_free_objectid
func (o *op) noteIno(root ondisk.ObjectID) error {
	if _, ok := o.f.nextIno[root]; ok {
		return nil
	}
	hi, err := o.highestObjectID(root)
	if err != nil {
		return err
	}
	o.f.nextIno[root] = max(hi, ondisk.FirstFreeObjectID) + 1
	return nil
}

// highestObjectID is the largest object ondisk.InodeRef below LAST_FREE_OBJECTID in a tree.
// mirrors btrfs_find_highest_objectid
func (o *op) highestObjectID(root ondisk.ObjectID) (ondisk.ObjectID, error) {
	t, err := o.tree(root)
	if err != nil {
		return 0, err
	}
	p, ok, err := t.SearchBackward(ondisk.Key{ObjectID: ondisk.LastFreeObjectID, Type: 0xff, Offset: ^uint64(0)})
	if err != nil {
		return 0, fmt.Errorf("tree %d: highest object id: %w", root, err)
	}
	if !ok {
		return 0, nil
	}
	return p.Key().ObjectID, nil
}

// newInode creates the inode item of a new object. mirrors btrfs_new_inode (item part)
func (o *op) newInode(id ondisk.InodeRef, mode, uid, gid uint32, rdev ondisk.DevT, flags uint64) (*item.InodeItem, error) {
	x := &item.InodeItem{
		Generation: o.transid, Transid: o.transid, NLink: 1,
		UID: uid, GID: gid, Mode: mode, Rdev: rdev, Flags: flags, Sequence: 1,
		Atime: o.now, Ctime: o.now, Mtime: o.now, Otime: o.now,
	}
	t, err := o.tree(id.Root)
	if err != nil {
		return nil, err
	}
	o.touched(id)
	if err := t.InsertItem(o.a, inodeKey(id.Ino), x.Bytes()); err != nil {
		return nil, fmt.Errorf("insert inode %v: %w", id, err)
	}
	return x, nil
}

// inheritFlags returns the inode flags a new inode takes from its parent
// directory. mirrors btrfs_inherit_iflags
func inheritFlags(parent *item.InodeItem, mode uint32) uint64 {
	var fl uint64
	pf := parent.Flags
	if pf&item.InodeNoCompress != 0 {
		fl |= item.InodeNoCompress
	} else if pf&item.InodeCompress != 0 {
		fl |= item.InodeCompress
	}
	if pf&item.InodeNoDataCow != 0 {
		fl |= item.InodeNoDataCow
		if isReg(mode) {
			fl |= item.InodeNoDataSum
		}
	}
	return fl
}

// writableInode reads the inode item of id for a change: its subvolume
// must be writable.
func (o *op) writableInode(id ondisk.InodeRef) (*item.InodeItem, error) {
	if err := o.writable(id.Root); err != nil {
		return nil, err
	}
	return o.inode(id)
}

// writableDir is writableInode for an inode that must be a directory.
func (o *op) writableDir(id ondisk.InodeRef) (*item.InodeItem, error) {
	if err := o.writable(id.Root); err != nil {
		return nil, err
	}
	return o.dirInode(id)
}
