package fsops

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/acl"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Xattr flags (setxattr).
const (
	XattrCreate  = 1
	XattrReplace = 2
)

func xattrKey(ino ondisk.ObjectID, name string) ondisk.Key {
	return ondisk.Key{ObjectID: ino, Type: ondisk.XattrItemKey, Offset: item.NameHash([]byte(name))}
}

// maxXattrSize is BTRFS_MAX_XATTR_SIZE: name and value together.
func (f *FS) maxXattrSize() int { return f.maxItemSize() - item.DirItemHeaderSize }

// GetXattr returns the value of name; ENODATA if unset.
func (f *FS) GetXattr(id ondisk.InodeRef, name string) ([]byte, error) {
	var val []byte
	err := f.run(func(o *op) error {
		if _, err := o.inode(id); err != nil {
			return err
		}
		d, err := o.findXattr(id, name)
		if err != nil {
			return err
		}
		if d == nil {
			return missf(syscall.ENODATA, "getxattr %q on %v", name, id)
		}
		val = d.Data
		return nil
	})
	return val, err
}

// ListXattr returns every xattr name of id in key order.
func (f *FS) ListXattr(id ondisk.InodeRef) ([]string, error) {
	var names []string
	err := f.run(func(o *op) error {
		if _, err := o.inode(id); err != nil {
			return err
		}
		t, err := o.tree(id.Root)
		if err != nil {
			return err
		}
		var derr error
		min := ondisk.Key{ObjectID: id.Ino, Type: ondisk.XattrItemKey}
		max := ondisk.Key{ObjectID: id.Ino, Type: ondisk.XattrItemKey, Offset: ^uint64(0)}
		err = t.Range(min, max, func(k ondisk.Key, data []byte) bool {
			ds, err := item.DecodeDirItems(data)
			if err != nil {
				derr = corruptf("xattr item %v: %w", k, err)
				return false
			}
			for _, d := range ds {
				names = append(names, string(d.Name))
			}
			return true
		})
		if err != nil {
			return err
		}
		return derr
	})
	return names, err
}

// SetXattr sets name to value; flags XattrCreate / XattrReplace as setxattr.
// The ACL xattrs follow the kernel's rules (acl.go): the value is checked,
// an access ACL sets the mode and is stored only when the mode cannot
// express it; XattrACLKillSGID clears S_ISGID then. mirrors btrfs_setxattr
func (f *FS) SetXattr(id ondisk.InodeRef, name string, value []byte, flags int) error {
	if name == "" || len(name) > nameMax {
		return errf(syscall.ERANGE, "setxattr %q", name)
	}
	if len(name)+len(value) > f.maxXattrSize() {
		return errf(syscall.ENOSPC, "setxattr %q on %v: %d bytes", name, id, len(name)+len(value))
	}
	if isProp(name) {
		return f.setProp(id, name, value, flags)
	}
	if acl.IsACL(name) {
		a, err := acl.Parse(value)
		if err != nil {
			return fmt.Errorf("setxattr %q on %v: %w", name, id, err)
		}
		return f.run(func(o *op) error { return o.setACL(id, name, a, flags) })
	}
	if !knownXattrPrefix(name) {
		return errf(syscall.EOPNOTSUPP, "setxattr %q on %v: no such namespace", name, id)
	}
	return f.run(func(o *op) error {
		x, err := o.writableInode(id)
		if err != nil {
			return err
		}
		if strings.HasPrefix(name, "user.") {
			if t := x.Mode & item.SIFMT; t != item.SIFREG && t != item.SIFDIR {
				// as the VFS: user attributes only on files and directories
				return errf(syscall.EPERM, "setxattr %q on %v: user attributes need a regular file or directory", name, id)
			}
		}
		old, err := o.findXattr(id, name)
		if err != nil {
			return err
		}
		if old != nil && flags&XattrCreate != 0 {
			return errf(syscall.EEXIST, "setxattr %q on %v", name, id)
		}
		if old == nil && flags&XattrReplace != 0 {
			return errf(syscall.ENODATA, "setxattr %q on %v", name, id)
		}
		if err := o.reserve(itemsXattr); err != nil {
			return fmt.Errorf("setxattr %q on %v: %w", name, id, err)
		}
		if err := o.putXattr(id, name, value); err != nil {
			return err
		}
		o.touch(x, false)
		return o.putInode(id, x)
	})
}

// RemoveXattr deletes name; ENODATA if unset. Removing an ACL that is not
// set is no error, as on btrfs.
func (f *FS) RemoveXattr(id ondisk.InodeRef, name string) error {
	if isProp(name) {
		return f.setProp(id, name, nil, XattrReplace)
	}
	if acl.IsACL(name) {
		return f.run(func(o *op) error { return o.setACL(id, name, nil, 0) })
	}
	return f.run(func(o *op) error {
		x, err := o.writableInode(id)
		if err != nil {
			return err
		}
		if d, err := o.findXattr(id, name); err != nil {
			return err
		} else if d == nil {
			return errf(syscall.ENODATA, "removexattr %q on %v", name, id)
		}
		if err := o.reserveForDelete(itemsXattr); err != nil {
			return fmt.Errorf("removexattr %q on %v: %w", name, id, err)
		}
		t, err := o.tree(id.Root)
		if err != nil {
			return err
		}
		if err := o.deleteNamed(t, xattrKey(id.Ino, name), name); err != nil {
			if isNotExist(err) {
				return errf(syscall.ENODATA, "removexattr %q on %v", name, id)
			}
			return err
		}
		o.touch(x, false)
		return o.putInode(id, x)
	})
}

// findXattr returns the entry for name or nil.
func (o *op) findXattr(id ondisk.InodeRef, name string) (*item.DirItem, error) {
	t, err := o.tree(id.Root)
	if err != nil {
		return nil, err
	}
	data, ok, err := t.Lookup(xattrKey(id.Ino, name))
	if err != nil || !ok {
		return nil, err
	}
	ds, err := item.DecodeDirItems(data)
	if err != nil {
		return nil, corruptf("xattr item of %v: %w", id, err)
	}
	for i := range ds {
		if bytes.Equal(ds[i].Name, []byte(name)) {
			return &ds[i], nil
		}
	}
	return nil, nil
}

// putXattr replaces or adds the entry in its XATTR_ITEM (entries whose names
// hash alike share one item). The entry type is BTRFS_FT_XATTR.
// mirrors btrfs_insert_xattr_item / do_setxattr
func (o *op) putXattr(id ondisk.InodeRef, name string, value []byte) error {
	t, err := o.tree(id.Root)
	if err != nil {
		return err
	}
	key := xattrKey(id.Ino, name)
	d := item.DirItem{Transid: o.transid, Type: item.FTXattr, Name: []byte(name), Data: value}
	var ds item.DirItems
	data, ok, err := t.Lookup(key)
	if err != nil {
		return err
	}
	if ok {
		if ds, err = item.DecodeDirItems(data); err != nil {
			return corruptf("xattr item %v: %w", key, err)
		}
	}
	out := item.DirItems{}
	for _, e := range ds {
		if !bytes.Equal(e.Name, d.Name) {
			out = append(out, e)
		}
	}
	out = append(out, d)
	if out.Size() > o.f.maxItemSize() {
		return errf(syscall.ENOSPC, "setxattr %q on %v: colliding names fill the item", name, id)
	}
	if err := t.PutItem(o.a, key, out.Bytes()); err != nil {
		return fmt.Errorf("setxattr %q on %v: %w", name, id, err)
	}
	return nil
}

// knownXattrPrefix reports whether name is in a namespace the kernel
// accepts on btrfs (xattr_permission and btrfs's handlers): user.,
// trusted., security. and btrfs. (ACLs, system.posix_acl_*, are checked
// apart; no other system. name exists on btrfs)
func knownXattrPrefix(name string) bool {
	for _, p := range []string{"user.", "trusted.", "security.", "btrfs."} {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			return true
		}
	}
	return false
}
