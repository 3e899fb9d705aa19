package fusefs

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Immutable (chattr +i) and append-only (chattr +a) inodes. The kernel's
// VFS refuses changes to them by the inode's S_IMMUTABLE and S_APPEND,
// which FUSE inodes never carry, so the daemon refuses them with EPERM as
// the VFS does for kernel btrfs (may_open, may_delete, may_create,
// notify_change, xattr_permission, vfs_link):
//   - +i: no open for writing, no attribute or xattr change, no new or
//     removed name in it or for it (a directory: no entry created or removed);
//   - +a: opens for writing need O_APPEND and no O_TRUNC; no mode, owner,
//     explicit time or size change, no xattr change; its names cannot be
//     removed or renamed; a directory takes new entries but loses none.

// fallocKeepSize is FALLOC_FL_KEEP_SIZE: the one fallocate mode an
// append-only file allows.
const fallocKeepSize = 0x01

// flagPerm is EPERM if id is immutable, or append-only when appendToo.
func (m *fsys) flagPerm(id ondisk.InodeRef, appendToo bool) syscall.Errno {
	fl, err := m.inodeFlags(id)
	if err != nil {
		return 0 // the operation itself reports it
	}
	if fl&item.InodeImmutable != 0 || appendToo && fl&item.InodeAppend != 0 {
		return syscall.EPERM
	}
	return 0
}

// mayDelete: name can leave directory n (n neither immutable nor
// append-only, nor the inode it names).
func (n *Node) mayDelete(name string) syscall.Errno {
	if e := n.m.flagPerm(n.id, true); e != 0 {
		return e
	}
	id, _, err := n.m.lookup(n.id, name)
	if err != nil {
		return 0
	}
	return n.m.flagPerm(id, true)
}

// mayOpen checks open flags against +i and +a.
func (n *Node) mayOpen(flags uint32) syscall.Errno {
	if flags&syscall.O_ACCMODE == syscall.O_RDONLY && flags&syscall.O_TRUNC == 0 {
		return 0
	}
	fl, err := n.m.inodeFlags(n.id)
	if err != nil {
		return 0
	}
	switch {
	case fl&item.InodeImmutable != 0:
		return syscall.EPERM
	case fl&item.InodeAppend != 0 && (flags&syscall.O_APPEND == 0 || flags&syscall.O_TRUNC != 0):
		return syscall.EPERM
	}
	return 0
}

// maySetattr checks a SETATTR against +i and +a: an append-only inode
// may only have its times set to now.
func (n *Node) maySetattr(in *fuse.SetAttrIn) syscall.Errno {
	fl, err := n.m.inodeFlags(n.id)
	if err != nil {
		return 0
	}
	if fl&item.InodeImmutable != 0 {
		// ftruncate on a file opened before chattr +i goes through: the
		// VFS checks +i for mode, owner and explicit times only
		// (notify_change), and do_ftruncate +a only
		const ftruncate = fuse.FATTR_SIZE | fuse.FATTR_FH | fuse.FATTR_LOCKOWNER | fuse.FATTR_KILL_SUIDGID | fuse.FATTR_MTIME | fuse.FATTR_CTIME
		if in.Valid&(fuse.FATTR_SIZE|fuse.FATTR_FH) == fuse.FATTR_SIZE|fuse.FATTR_FH && in.Valid&^ftruncate == 0 {
			return 0
		}
		return syscall.EPERM
	}
	if fl&item.InodeAppend != 0 {
		const now = fuse.FATTR_ATIME_NOW | fuse.FATTR_MTIME_NOW
		v := in.Valid &^ (fuse.FATTR_FH | fuse.FATTR_LOCKOWNER | fuse.FATTR_KILL_SUIDGID | fuse.FATTR_CTIME)
		if v&now == 0 && v&(fuse.FATTR_ATIME|fuse.FATTR_MTIME) != 0 || v&^(now|fuse.FATTR_ATIME|fuse.FATTR_MTIME) != 0 {
			return syscall.EPERM
		}
	}
	return 0
}
