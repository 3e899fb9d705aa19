package fsops

import (
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Orphans. An inode whose last name goes while it is still in use (an
// open file or directory, or an O_TMPFILE) keeps its items, with nlink 0,
// and an ORPHAN_ITEM (key ORPHAN, ORPHAN_ITEM, inode number) in its
// subvolume's tree; its last close deletes it (DropOrphan). After a crash
// the next read-write open deletes it, ours (CleanOrphans) or the
// kernel's. mirrors btrfs_orphan_add, btrfs_orphan_del and
// btrfs_orphan_cleanup

// orphanKey is the ORPHAN_ITEM of inode ino in a subvolume's tree.
func orphanKey(ino ondisk.ObjectID) ondisk.Key {
	return ondisk.Key{ObjectID: ondisk.OrphanObjectID, Type: ondisk.OrphanItemKey, Offset: uint64(ino)}
}

// SetInUse installs inUse: when an inode loses its last link (or a
// directory its name), inUse(id) says whether something still uses it; if
// so it is kept as an orphan rather than deleted. inUse is called with the
// engine's lock held and must not call back into it.
func (f *FS) SetInUse(inUse func(ondisk.InodeRef) bool) {
	f.mu.Lock()
	f.inUse = inUse
	f.mu.Unlock()
}

// keepOrphan makes id (which just lost its last link) an orphan when it is
// in use, and reports whether it did.
func (o *op) keepOrphan(id ondisk.InodeRef, x *item.InodeItem) (bool, error) {
	if o.f.inUse == nil || !o.f.inUse(id) {
		return false, nil
	}
	x.NLink = 0
	o.touch(x, false)
	if err := o.putInode(id, x); err != nil {
		return true, err
	}
	return true, o.addOrphan(id)
}

// addOrphan inserts id's ORPHAN_ITEM.
func (o *op) addOrphan(id ondisk.InodeRef) error {
	t, err := o.tree(id.Root)
	if err != nil {
		return err
	}
	if err := t.PutItem(o.a, orphanKey(id.Ino), nil); err != nil {
		return fmt.Errorf("orphan item of %v: %w", id, err)
	}
	return nil
}

// delOrphan deletes id's ORPHAN_ITEM if it has one.
func (o *op) delOrphan(id ondisk.InodeRef) error {
	t, err := o.tree(id.Root)
	if err != nil {
		return err
	}
	_, ok, err := t.Lookup(orphanKey(id.Ino))
	if err != nil || !ok {
		return err
	}
	if err := t.DeleteItem(o.a, orphanKey(id.Ino)); err != nil {
		return fmt.Errorf("delete orphan item of %v: %w", id, err)
	}
	return nil
}

// DropOrphan deletes orphan id once nothing uses it: its items, data
// references and ORPHAN_ITEM. An inode that has a name again (linkat of an
// O_TMPFILE) only loses its ORPHAN_ITEM; one already gone is no error.
func (f *FS) DropOrphan(id ondisk.InodeRef) error {
	return f.run(func(o *op) error {
		x, err := o.inode(id)
		if isNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if x.NLink > 0 {
			return o.delOrphan(id)
		}
		items, err := o.dropLinkItems(id, x)
		if err != nil {
			return err
		}
		if err := o.reserveForDelete(items + 1); err != nil {
			return fmt.Errorf("delete orphan %v: %w", id, err)
		}
		if err := o.deleteInode(id); err != nil {
			return err
		}
		return o.delOrphan(id)
	})
}

// CreateTmpfile makes a regular file with no name in dir's subvolume
// (O_TMPFILE): nlink 0 and an ORPHAN_ITEM until Link gives it a name. It
// takes dir's inheritable flags and default ACL. mirrors btrfs_tmpfile
func (f *FS) CreateTmpfile(dir ondisk.InodeRef, mode, uid, gid uint32) (ondisk.InodeRef, error) {
	mode = mode&0o7777 | item.SIFREG
	var id ondisk.InodeRef
	err := f.run(func(o *op) error {
		dx, err := o.writableInode(dir)
		if err != nil {
			return err
		}
		if !isDir(dx.Mode) {
			return errf(syscall.ENOTDIR, "tmpfile in %v", dir)
		}
		acls, err := o.inheritACL(dir, mode)
		if err != nil {
			return err
		}
		if err := o.reserve(itemsCreate + acls.items()); err != nil {
			return fmt.Errorf("tmpfile in %v: %w", dir, err)
		}
		ino, err := o.allocIno(dir.Root)
		if err != nil {
			return err
		}
		id = ondisk.InodeRef{Root: dir.Root, Ino: ino}
		x, err := o.newInode(id, acls.mode, uid, gid, 0, inheritFlags(dx, acls.mode))
		if err != nil {
			return err
		}
		if err := o.putInherited(id, &acls); err != nil {
			return err
		}
		x.NLink = 0
		if err := o.putInode(id, x); err != nil {
			return err
		}
		return o.addOrphan(id)
	})
	return id, err
}

// CleanOrphans deletes what the ORPHAN_ITEMs of every subvolume name, as
// a read-write mount does after a crash: an inode with no link left goes
// with its data; an item whose inode has links again, or none, is only
// removed. Inodes something uses now (SetInUse) are left. It returns how
// many inodes it deleted. mirrors btrfs_orphan_cleanup
func (f *FS) CleanOrphans() (int, error) {
	roots := []ondisk.ObjectID{ondisk.FSTreeObjectID}
	subs, err := f.ListSubvolumes()
	if err != nil {
		return 0, fmt.Errorf("clean orphans: %w", err)
	}
	for _, s := range subs {
		roots = append(roots, s.ID)
	}
	n := 0
	for _, root := range roots {
		k, err := f.cleanOrphansOf(root)
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// cleanOrphansOf deletes the orphans of subvolume root that nothing uses
// (CleanOrphans) and returns how many inodes it deleted.
func (f *FS) cleanOrphansOf(root ondisk.ObjectID) (int, error) {
	inos, err := f.orphanInodes(root)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, ino := range inos {
		id := ondisk.InodeRef{Root: root, Ino: ino}
		f.mu.Lock()
		busy := f.inUse != nil && f.inUse(id)
		f.mu.Unlock()
		if busy {
			continue
		}
		deleted := false
		err := f.run(func(o *op) error {
			x, err := o.inode(id)
			if err != nil && !isNotExist(err) {
				return err
			}
			if err == nil && x.NLink == 0 {
				items, err := o.dropLinkItems(id, x)
				if err != nil {
					return err
				}
				if err := o.reserveForDelete(items + 1); err != nil {
					return err
				}
				if err := o.deleteInode(id); err != nil {
					return err
				}
				deleted = true
			} else if err := o.reserveForDelete(1); err != nil {
				return err
			}
			return o.delOrphan(id)
		})
		if err != nil {
			return n, fmt.Errorf("clean orphan %v: %w", id, err)
		}
		if deleted {
			n++
		}
	}
	return n, nil
}

// orphanInodes lists the inode numbers of root's ORPHAN_ITEMs.
func (f *FS) orphanInodes(root ondisk.ObjectID) ([]ondisk.ObjectID, error) {
	var inos []ondisk.ObjectID
	err := f.run(func(o *op) error {
		t, err := o.tree(root)
		if err != nil {
			if isNotExist(err) {
				return nil
			}
			return err
		}
		lo := ondisk.Key{ObjectID: ondisk.OrphanObjectID, Type: ondisk.OrphanItemKey}
		hi := ondisk.Key{ObjectID: ondisk.OrphanObjectID, Type: ondisk.OrphanItemKey, Offset: ^uint64(0)}
		return t.Range(lo, hi, func(k ondisk.Key, _ []byte) bool {
			if ino := ondisk.ObjectID(k.Offset); ino >= ondisk.FirstFreeObjectID && ino <= ondisk.LastFreeObjectID {
				inos = append(inos, ino)
			}
			return true
		})
	})
	if err != nil {
		return nil, fmt.Errorf("orphan items of tree %d: %w", root, err)
	}
	return inos, nil
}
