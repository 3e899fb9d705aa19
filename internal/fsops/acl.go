package fsops

import (
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/acl"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// POSIX ACLs live in the system.posix_acl_access and system.posix_acl_default
// xattrs in the kernel's format (internal/acl), and follow the kernel's
// rules wherever they are changed (fs/btrfs/acl.c over fs/posix_acl.c):
//   - setting an access ACL sets the mode's permission bits from it, and an
//     ACL the mode expresses fully is not stored (SetXattr);
//   - chmod rewrites the stored access ACL's owner, mask (or group) and
//     other entries (Setattr);
//   - a new inode takes its directory's default ACL (create);
//   - S_ISGID is cleared on a set only when asked (XattrACLKillSGID): the
//     library acts with every privilege, as root with CAP_FSETID does; the
//     FUSE mount passes what the kernel decided.

// XattrACLKillSGID, or-ed into SetXattr's flags, clears S_ISGID when an
// access ACL is set (the caller is neither in the file's group nor has
// CAP_FSETID; FUSE's FUSE_SETXATTR_ACL_KILL_SGID).
const XattrACLKillSGID = 1 << 16

// aclOf reads and parses the ACL xattr name of id; nil if it has none.
func (o *op) aclOf(id ondisk.InodeRef, name string) (acl.ACL, error) {
	d, err := o.findXattr(id, name)
	if err != nil || d == nil {
		return nil, err
	}
	a, err := acl.Parse(d.Data)
	if err != nil {
		return nil, corruptf("%s of inode %v: %w", name, id, err)
	}
	return a, nil
}

// setACL sets (a != nil) or removes the ACL xattr name of id: the kernel's
// set_posix_acl then btrfs_set_acl. Flags XATTR_CREATE / XATTR_REPLACE do
// not apply to ACLs, as in the kernel. mirrors btrfs_set_acl
func (o *op) setACL(id ondisk.InodeRef, name string, a acl.ACL, flags int) error {
	x, err := o.writableInode(id)
	if err != nil {
		return err
	}
	if isLnk(x.Mode) {
		return errf(syscall.EOPNOTSUPP, "set %s on symlink %v", name, id)
	}
	ok, err := acl.CheckSet(name, a, x.Mode)
	if err != nil {
		return fmt.Errorf("set %s on %v: %w", name, id, err)
	}
	if !ok {
		return nil
	}
	mode := x.Mode
	if name == acl.AccessXattr && a != nil {
		if mode, a, err = acl.UpdateMode(a, x.Mode, flags&XattrACLKillSGID != 0); err != nil {
			return fmt.Errorf("set %s on %v: %w", name, id, err)
		}
	}
	if err := o.reserve(itemsXattr); err != nil {
		return fmt.Errorf("set %s on %v: %w", name, id, err)
	}
	if err := o.storeACL(id, name, a); err != nil {
		return err
	}
	x.Mode = mode
	o.touch(x, false)
	return o.putInode(id, x)
}

// storeACL writes a as the xattr name, or deletes the xattr when a is nil
// (absent is fine).
func (o *op) storeACL(id ondisk.InodeRef, name string, a acl.ACL) error {
	if a != nil {
		return o.putXattr(id, name, a.Bytes())
	}
	t, err := o.tree(id.Root)
	if err != nil {
		return err
	}
	if err := o.deleteNamed(t, xattrKey(id.Ino, name), name); err != nil && !isNotExist(err) {
		return fmt.Errorf("remove %s of %v: %w", name, id, err)
	}
	return nil
}

// chmodACL brings id's access ACL, if it has one, in line with the new
// mode of x. It must run after the reservation (one more item than the
// inode, see aclItems). mirrors posix_acl_chmod
func (o *op) chmodACL(id ondisk.InodeRef, x *item.InodeItem) error {
	if isLnk(x.Mode) {
		return nil
	}
	a, err := o.aclOf(id, acl.AccessXattr)
	if err != nil || a == nil {
		return err
	}
	if a, err = a.Chmod(x.Mode); err != nil {
		return corruptf("%s of inode %v: %w", acl.AccessXattr, id, err)
	}
	mode, a, err := acl.UpdateMode(a, x.Mode, false)
	if err != nil {
		return corruptf("%s of inode %v: %w", acl.AccessXattr, id, err)
	}
	x.Mode = mode
	return o.storeACL(id, acl.AccessXattr, a)
}

// hasAccessACL reports whether id has an access ACL xattr (to reserve for
// rewriting it).
func (o *op) hasAccessACL(id ondisk.InodeRef) (bool, error) {
	d, err := o.findXattr(id, acl.AccessXattr)
	return d != nil, err
}

// inherited is what a new inode takes from its directory's default ACL.
type inherited struct {
	mode           uint32
	access, dflt   acl.ACL
	fromDefaultACL bool // the directory had a default ACL
}

// items is how many more items storing the ACLs changes.
func (in *inherited) items() int {
	n := 0
	if in.access != nil {
		n++
	}
	if in.dflt != nil {
		n++
	}
	return n
}

// inheritACL decides the mode and ACLs of an inode of mode created in dir.
// The umask is the caller's business (the FUSE mount applies it when the
// directory has no default ACL; the library has none). mirrors posix_acl_create
func (o *op) inheritACL(dir ondisk.InodeRef, mode uint32) (inherited, error) {
	in := inherited{mode: mode}
	if isLnk(mode) {
		return in, nil
	}
	def, err := o.aclOf(dir, acl.DefaultXattr)
	if err != nil || def == nil {
		return in, err
	}
	in.fromDefaultACL = true
	if in.mode, in.access, in.dflt, err = acl.Inherit(def, mode); err != nil {
		return in, corruptf("%s of directory %v: %w", acl.DefaultXattr, dir, err)
	}
	return in, nil
}

// putInherited stores the ACLs of a new inode. mirrors btrfs_init_acl
func (o *op) putInherited(id ondisk.InodeRef, in *inherited) error {
	if in.dflt != nil {
		if err := o.putXattr(id, acl.DefaultXattr, in.dflt.Bytes()); err != nil {
			return err
		}
	}
	if in.access != nil {
		return o.putXattr(id, acl.AccessXattr, in.access.Bytes())
	}
	return nil
}

// HasDefaultACL reports whether directory dir has a default ACL (the FUSE
// mount applies the umask to new inodes only when it has none).
func (f *FS) HasDefaultACL(dir ondisk.InodeRef) (bool, error) {
	var has bool
	err := f.run(func(o *op) error {
		d, err := o.findXattr(dir, acl.DefaultXattr)
		has = d != nil
		return err
	})
	return has, err
}

// InheritACL gives id, a regular file just made elsewhere (an O_TMPFILE in
// the hidden orphan directory), the permission bits and access ACL it
// would have had if created with mode in dir: what dir's default ACL says
// (nothing changes when dir has none).
func (f *FS) InheritACL(dir, id ondisk.InodeRef, mode uint32) error {
	return f.run(func(o *op) error {
		in, err := o.inheritACL(dir, mode)
		if err != nil || !in.fromDefaultACL {
			return err
		}
		x, err := o.writableInode(id)
		if err != nil {
			return err
		}
		if err := o.reserve(itemsXattr); err != nil {
			return fmt.Errorf("inherit ACL of %v on %v: %w", dir, id, err)
		}
		if err := o.storeACL(id, acl.AccessXattr, in.access); err != nil {
			return err
		}
		x.Mode = x.Mode&item.SIFMT | in.mode&0o7777
		return o.putInode(id, x)
	})
}
