package fsops

import (
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Stat returns the inode item of id.
func (f *FS) Stat(id ondisk.InodeRef) (item.InodeItem, error) {
	var x item.InodeItem
	err := f.readInode(id, func(o *op) error {
		p, err := o.inode(id)
		if err == nil {
			x = *p
		}
		return err
	})
	return x, err
}

// Lookup resolves name in directory dir. A subvolume's entry resolves to its
// root directory.
func (f *FS) Lookup(dir ondisk.InodeRef, name string) (ondisk.InodeRef, item.InodeItem, error) {
	var id ondisk.InodeRef
	var x item.InodeItem
	err := f.run(func(o *op) error {
		e, err := o.lookupEntry(dir, name)
		if err != nil {
			return err
		}
		id = e.Target(dir.Root)
		p, err := o.inode(id)
		if err == nil {
			x = *p
		}
		return err
	})
	return id, x, err
}

// ReadDir lists dir in index order.
func (f *FS) ReadDir(dir ondisk.InodeRef) ([]Entry, error) {
	var out []Entry
	err := f.run(func(o *op) error {
		dx, err := o.inode(dir)
		if err != nil {
			return err
		}
		if !isDir(dx.Mode) {
			return errf(syscall.ENOTDIR, "readdir %v", dir)
		}
		return o.readDir(dir, func(e Entry) bool { out = append(out, e); return true })
	})
	return out, err
}

// Create makes a regular file, fifo, socket or device node (by the type bits
// of mode; none means a regular file) called name in dir.
// mirrors btrfs_create / btrfs_mknod
func (f *FS) Create(dir ondisk.InodeRef, name string, mode, uid, gid uint32, rdev ondisk.DevT) (ondisk.InodeRef, error) {
	if mode&item.SIFMT == 0 {
		mode |= item.SIFREG
	}
	switch mode & item.SIFMT {
	case item.SIFREG, item.SIFIFO, item.SIFSOCK, item.SIFCHR, item.SIFBLK:
	default:
		return ondisk.InodeRef{}, errf(syscall.EINVAL, "create %q: mode %o", name, mode)
	}
	if mode&item.SIFMT == item.SIFREG || mode&item.SIFMT == item.SIFIFO || mode&item.SIFMT == item.SIFSOCK {
		rdev = 0
	}
	var id ondisk.InodeRef
	err := f.run(func(o *op) error {
		var err error
		id, _, err = o.create(dir, name, mode, uid, gid, rdev, itemsCreate)
		return err
	})
	return id, err
}

// Mkdir makes a directory. mirrors btrfs_mkdir
func (f *FS) Mkdir(dir ondisk.InodeRef, name string, mode, uid, gid uint32) (ondisk.InodeRef, error) {
	mode = mode&0o7777 | item.SIFDIR
	var id ondisk.InodeRef
	err := f.run(func(o *op) error {
		var err error
		id, _, err = o.create(dir, name, mode, uid, gid, 0, itemsCreate)
		return err
	})
	return id, err
}

// Symlink makes a symbolic link whose target is stored as an inline extent.
// mirrors btrfs_symlink
func (f *FS) Symlink(dir ondisk.InodeRef, name, target string, uid, gid uint32) (ondisk.InodeRef, error) {
	if len(target) == 0 {
		return ondisk.InodeRef{}, errf(syscall.ENOENT, "symlink %q: empty target", name)
	}
	if len(target) >= 4096 || len(target) >= int(f.sectorSize) || len(target) > f.maxInlineData() {
		return ondisk.InodeRef{}, errf(syscall.ENAMETOOLONG, "symlink %q: target of %d bytes", name, len(target))
	}
	var id ondisk.InodeRef
	err := f.run(func(o *op) error {
		var x *item.InodeItem
		var err error
		id, x, err = o.create(dir, name, item.SIFLNK|0o777, uid, gid, 0, itemsSymlink)
		if err != nil {
			return err
		}
		if err := o.insertInline(id, []byte(target)); err != nil {
			return err
		}
		x.Size = uint64(len(target))
		x.NBytes = uint64(len(target))
		return o.putInode(id, x)
	})
	return id, err
}

// create makes a new inode and links it as name in dir, reserving items
// first. mirrors btrfs_create_new_inode
func (o *op) create(dir ondisk.InodeRef, name string, mode, uid, gid uint32, rdev ondisk.DevT, items int) (ondisk.InodeRef, *item.InodeItem, error) {
	if err := checkName(name); err != nil {
		return ondisk.InodeRef{}, nil, err
	}
	dx, err := o.writableInode(dir)
	if err != nil {
		return ondisk.InodeRef{}, nil, err
	}
	if !isDir(dx.Mode) {
		return ondisk.InodeRef{}, nil, errf(syscall.ENOTDIR, "create %q in %v", name, dir)
	}
	if _, err := o.lookupEntry(dir, name); err == nil {
		return ondisk.InodeRef{}, nil, errf(syscall.EEXIST, "create %q in %v", name, dir)
	} else if !isNotExist(err) {
		return ondisk.InodeRef{}, nil, err
	}
	acls, err := o.inheritACL(dir, mode)
	if err != nil {
		return ondisk.InodeRef{}, nil, err
	}
	mode = acls.mode
	if err := o.reserve(items + acls.items()); err != nil {
		return ondisk.InodeRef{}, nil, fmt.Errorf("create %q in %v: %w", name, dir, err)
	}
	ino, err := o.allocIno(dir.Root)
	if err != nil {
		return ondisk.InodeRef{}, nil, err
	}
	id := ondisk.InodeRef{Root: dir.Root, Ino: ino}
	x, err := o.newInode(id, mode, uid, gid, rdev, inheritFlags(dx, mode))
	if err != nil {
		return ondisk.InodeRef{}, nil, err
	}
	if err := o.putInherited(id, &acls); err != nil {
		return ondisk.InodeRef{}, nil, err
	}
	e := &Entry{Name: name, Type: item.FTFromMode(mode), Location: inodeKey(ino)}
	if err := o.addLink(dir, dx, e); err != nil {
		return ondisk.InodeRef{}, nil, err
	}
	return id, x, nil
}

// Link gives the existing inode target another name in dir. mirrors btrfs_link
func (f *FS) Link(target, dir ondisk.InodeRef, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return f.run(func(o *op) error {
		if target.Root != dir.Root {
			return errf(syscall.EXDEV, "link %v as %q in %v", target, name, dir)
		}
		dx, err := o.writableInode(dir)
		if err != nil {
			return err
		}
		if !isDir(dx.Mode) {
			return errf(syscall.ENOTDIR, "link %q in %v", name, dir)
		}
		x, err := o.inode(target)
		if err != nil {
			return err
		}
		if isDir(x.Mode) {
			return errf(syscall.EPERM, "link directory %v", target)
		}
		if x.NLink >= linkMax {
			return errf(syscall.EMLINK, "link %v", target)
		}
		if _, err := o.lookupEntry(dir, name); err == nil {
			return errf(syscall.EEXIST, "link %q in %v", name, dir)
		} else if !isNotExist(err) {
			return err
		}
		if err := o.reserve(itemsLink); err != nil {
			return fmt.Errorf("link %v as %q in %v: %w", target, name, dir, err)
		}
		e := &Entry{Name: name, Type: item.FTFromMode(x.Mode), Location: inodeKey(target.Ino)}
		if err := o.addLink(dir, dx, e); err != nil {
			return err
		}
		x.NLink++
		o.touch(x, false)
		if err := o.putInode(target, x); err != nil {
			return err
		}
		if x.NLink == 1 { // an O_TMPFILE gets its first name
			return o.delOrphan(target)
		}
		return nil
	})
}

// Unlink removes a non-directory name. mirrors btrfs_unlink
func (f *FS) Unlink(dir ondisk.InodeRef, name string) error {
	return f.run(func(o *op) error { return o.unlink(dir, name, false) })
}

// Rmdir removes an empty directory (or an empty subvolume, as the kernel
// does). mirrors btrfs_rmdir
func (f *FS) Rmdir(dir ondisk.InodeRef, name string) error {
	return f.run(func(o *op) error { return o.unlink(dir, name, true) })
}

func (o *op) unlink(dir ondisk.InodeRef, name string, wantDir bool) error {
	dx, err := o.writableInode(dir)
	if err != nil {
		return err
	}
	if !isDir(dx.Mode) {
		return errf(syscall.ENOTDIR, "unlink %q in %v", name, dir)
	}
	e, err := o.lookupEntry(dir, name)
	if err != nil {
		return err
	}
	if e.IsSubvol() {
		if !wantDir {
			return errf(syscall.EISDIR, "unlink %q in %v: a subvolume", name, dir)
		}
		return o.deleteSubvol(dir, dx, name, e)
	}
	tid := e.Target(dir.Root)
	x, err := o.inode(tid)
	if err != nil {
		return err
	}
	if wantDir && !isDir(x.Mode) {
		return errf(syscall.ENOTDIR, "rmdir %q in %v", name, dir)
	}
	if !wantDir && isDir(x.Mode) {
		return errf(syscall.EISDIR, "unlink %q in %v", name, dir)
	}
	if wantDir {
		if empty, err := o.dirEmpty(tid); err != nil {
			return err
		} else if !empty {
			return errf(syscall.ENOTEMPTY, "rmdir %q in %v", name, dir)
		}
	}
	items, err := o.dropLinkItems(tid, x)
	if err != nil {
		return err
	}
	if err := o.reserveForDelete(itemsUnlink + items); err != nil {
		return fmt.Errorf("unlink %q in %v: %w", name, dir, err)
	}
	if _, err := o.removeLink(dir, dx, name); err != nil {
		return err
	}
	return o.dropLink(tid, x)
}
