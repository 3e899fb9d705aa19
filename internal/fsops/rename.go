package fsops

import (
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Rename flags (renameat2).
const (
	RenameNoReplace = 1 << 0
	RenameExchange  = 1 << 1
	RenameWhiteout  = 1 << 2
)

// Rename moves srcName in srcDir to dstName in dstDir, replacing what is
// there unless flags say otherwise. Both directories must be in one subvolume
// (EXDEV). mirrors btrfs_rename2
func (f *FS) Rename(srcDir ondisk.InodeRef, srcName string, dstDir ondisk.InodeRef, dstName string, flags uint32) error {
	if flags&^(RenameNoReplace|RenameExchange) != 0 || flags == RenameNoReplace|RenameExchange {
		return errf(syscall.EINVAL, "rename %q: flags %#x", srcName, flags)
	}
	if err := checkName(srcName); err != nil {
		return err
	}
	if err := checkName(dstName); err != nil {
		return err
	}
	return f.run(func(o *op) error { return o.rename(srcDir, srcName, dstDir, dstName, flags) })
}

func (o *op) rename(srcDir ondisk.InodeRef, srcName string, dstDir ondisk.InodeRef, dstName string, flags uint32) error {
	if srcDir.Root != dstDir.Root {
		return errf(syscall.EXDEV, "rename %q in %v to %q in %v", srcName, srcDir, dstName, dstDir)
	}
	sdx, err := o.writableDir(srcDir)
	if err != nil {
		return err
	}
	ddx := sdx
	if dstDir != srcDir {
		if ddx, err = o.dirInode(dstDir); err != nil {
			return err
		}
	}
	se, err := o.lookupEntry(srcDir, srcName)
	if err != nil {
		return err
	}
	de, err := o.lookupEntry(dstDir, dstName)
	if err != nil && !isNotExist(err) {
		return err
	}
	exchange := flags&RenameExchange != 0
	switch {
	case de == nil && exchange:
		return errf(syscall.ENOENT, "rename exchange %q in %v", dstName, dstDir)
	case de != nil && flags&RenameNoReplace != 0:
		return errf(syscall.EEXIST, "rename %q to %q in %v", srcName, dstName, dstDir)
	case de != nil && de.Location == se.Location:
		return nil // two names of one inode: nothing to do
	}
	if err := o.checkRenameTarget(srcDir, se, dstDir, de, exchange); err != nil {
		return err
	}
	if se.Type == item.FTDir && !se.IsSubvol() {
		if err := o.checkNotAncestor(se.Target(srcDir.Root), dstDir); err != nil {
			return err
		}
	}
	if exchange && de.Type == item.FTDir && !de.IsSubvol() {
		if err := o.checkNotAncestor(de.Target(dstDir.Root), srcDir); err != nil {
			return err
		}
	}
	if err := o.reserveRename(srcDir, se, dstDir, de, exchange); err != nil {
		return fmt.Errorf("rename %q in %v to %q in %v: %w", srcName, srcDir, dstName, dstDir, err)
	}
	if exchange {
		return o.exchange(srcDir, sdx, se, dstDir, ddx, de)
	}
	if de != nil {
		if _, err := o.removeLink(dstDir, ddx, dstName); err != nil {
			return err
		}
		did := de.Target(dstDir.Root)
		dx, err := o.inode(did)
		if err != nil {
			return err
		}
		if err := o.dropLink(did, dx); err != nil {
			return err
		}
	}
	if _, err := o.removeLink(srcDir, sdx, srcName); err != nil {
		return err
	}
	if err := o.addLink(dstDir, ddx, &Entry{Name: dstName, Type: se.Type, Location: se.Location}); err != nil {
		return err
	}
	return o.touchTarget(srcDir, se)
}

// reserveRename reserves the worst case of a rename: two unlinks and a
// link (btrfs_rename), plus the items of a replaced inode that goes; for an
// exchange, per name the dir items, index and parent, and the inode, its
// ref, or for a subvolume its root refs (btrfs_rename_exchange).
func (o *op) reserveRename(srcDir ondisk.InodeRef, se *Entry, dstDir ondisk.InodeRef, de *Entry, exchange bool) error {
	items := itemsRename
	switch {
	case exchange:
		items = 10
		if srcDir == dstDir {
			items = 9
		}
		for _, e := range []*Entry{se, de} {
			if e.IsSubvol() {
				items += 4
			} else {
				items += 3
			}
		}
	case de != nil && !de.IsSubvol():
		did := de.Target(dstDir.Root)
		x, err := o.inode(did)
		if err != nil {
			return err
		}
		n, err := o.dropLinkItems(did, x)
		if err != nil {
			return err
		}
		items += 1 + n
	}
	return o.reserve(items)
}

// exchange swaps two names (RENAME_EXCHANGE). mirrors btrfs_rename_exchange
func (o *op) exchange(srcDir ondisk.InodeRef, sdx *item.InodeItem, se *Entry, dstDir ondisk.InodeRef, ddx *item.InodeItem, de *Entry) error {
	if _, err := o.removeLink(srcDir, sdx, se.Name); err != nil {
		return err
	}
	if _, err := o.removeLink(dstDir, ddx, de.Name); err != nil {
		return err
	}
	if err := o.addLink(dstDir, ddx, &Entry{Name: de.Name, Type: se.Type, Location: se.Location}); err != nil {
		return err
	}
	if err := o.addLink(srcDir, sdx, &Entry{Name: se.Name, Type: de.Type, Location: de.Location}); err != nil {
		return err
	}
	if err := o.touchTarget(srcDir, se); err != nil {
		return err
	}
	return o.touchTarget(dstDir, de)
}

// checkRenameTarget applies the type rules of replacing de by se.
func (o *op) checkRenameTarget(srcDir ondisk.InodeRef, se *Entry, dstDir ondisk.InodeRef, de *Entry, exchange bool) error {
	if de == nil || exchange {
		return nil
	}
	sdir, ddir := se.Type == item.FTDir, de.Type == item.FTDir
	switch {
	case sdir && !ddir:
		return errf(syscall.ENOTDIR, "rename %q over %q in %v", se.Name, de.Name, dstDir)
	case !sdir && ddir:
		return errf(syscall.EISDIR, "rename %q over %q in %v", se.Name, de.Name, dstDir)
	case de.IsSubvol():
		return errf(syscall.EBUSY, "rename %q over subvolume %q in %v", se.Name, de.Name, dstDir)
	case ddir:
		empty, err := o.dirEmpty(de.Target(dstDir.Root))
		if err != nil {
			return err
		}
		if !empty {
			return errf(syscall.ENOTEMPTY, "rename %q over %q in %v", se.Name, de.Name, dstDir)
		}
	}
	return nil
}

// checkNotAncestor refuses to move directory moved into its own subtree:
// EINVAL when moved is dir or one of its ancestors.
func (o *op) checkNotAncestor(moved, dir ondisk.InodeRef) error {
	cur := dir
	for i := 0; ; i++ {
		if cur == moved {
			return errf(syscall.EINVAL, "rename %v into its own subtree %v", moved, dir)
		}
		if cur.Ino == RootDirIno || i > 1<<16 {
			return nil
		}
		parent, err := o.parentDir(cur)
		if err != nil {
			return err
		}
		cur.Ino = parent
	}
}

// touchTarget updates the ctime of a renamed inode.
func (o *op) touchTarget(dir ondisk.InodeRef, e *Entry) error {
	if e.IsSubvol() {
		return nil // its root directory lives in the (maybe read-only) subvolume
	}
	id := e.Target(dir.Root)
	x, err := o.inode(id)
	if err != nil {
		return err
	}
	o.touch(x, false)
	return o.putInode(id, x)
}

// dirInode reads an inode that must be a directory.
func (o *op) dirInode(id ondisk.InodeRef) (*item.InodeItem, error) {
	x, err := o.inode(id)
	if err != nil {
		return nil, err
	}
	if !isDir(x.Mode) {
		return nil, errf(syscall.ENOTDIR, "%v", id)
	}
	return x, nil
}
