package fsops

import (
	"fmt"
	"syscall"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// What a SetAttr changes.
const (
	SetMode uint32 = 1 << iota
	SetUID
	SetGID
	SetSize
	SetAtime
	SetMtime
	SetCtime
	SetFlags
)

// SetAttr is the change Setattr applies; Valid says which fields count.
type SetAttr struct {
	Valid uint32
	Mode  uint32 // permission bits (the file type cannot change)
	UID   uint32
	GID   uint32
	Size  uint64
	Atime time.Time
	Mtime time.Time
	Ctime time.Time
	Flags uint64 // inode flags (NODATACOW, NODATASUM, NOCOMPRESS, COMPRESS ...)
}

// Setattr changes an inode's attributes; the ctime becomes now unless
// given. A new mode rewrites the access ACL (acl.go). mirrors btrfs_setattr
func (f *FS) Setattr(id ondisk.InodeRef, a SetAttr) (item.InodeItem, error) {
	var out item.InodeItem
	err := f.run(func(o *op) error {
		x, err := o.writableInode(id)
		if err != nil {
			return err
		}
		items := itemsInode
		chmodACL := false
		if a.Valid&SetMode != 0 && !isLnk(x.Mode) {
			if chmodACL, err = o.hasAccessACL(id); err != nil {
				return err
			}
			if chmodACL {
				items++ // the access ACL follows the mode: posix_acl_chmod
			}
		}
		if a.Valid&SetSize != 0 && a.Size != x.Size {
			if !isReg(x.Mode) {
				if isDir(x.Mode) {
					return errf(syscall.EISDIR, "truncate %v", id)
				}
				return errf(syscall.EINVAL, "truncate %v", id)
			}
			if err := o.truncate(id, x, a.Size, items); err != nil {
				return err
			}
			o.touch(x, true)
		} else if err := o.reserveForDelete(items); err != nil {
			// Updating an inode item in place only copies a path: like
			// btrfs_dirty_inode, which first joins the transaction without
			// reserving, let it use the global reserve (touch and chmod
			// work on a full filesystem).
			return fmt.Errorf("setattr %v: %w", id, err)
		}
		if a.Valid&SetMode != 0 {
			x.Mode = x.Mode&item.SIFMT | a.Mode&0o7777
			if chmodACL {
				if err := o.chmodACL(id, x); err != nil {
					return err
				}
			}
		}
		if a.Valid&SetUID != 0 {
			x.UID = a.UID
		}
		if a.Valid&SetGID != 0 {
			x.GID = a.GID
		}
		if a.Valid&SetFlags != 0 {
			if err := o.setFlags(id, x, a.Flags); err != nil {
				return err
			}
		}
		x.Transid = o.transid
		x.Sequence++
		x.Ctime = o.now
		if a.Valid&SetAtime != 0 {
			x.Atime = item.TimespecOf(a.Atime)
		}
		if a.Valid&SetMtime != 0 {
			x.Mtime = item.TimespecOf(a.Mtime)
		}
		if a.Valid&SetCtime != 0 {
			x.Ctime = item.TimespecOf(a.Ctime)
		}
		out = *x
		return o.putInode(id, x)
	})
	return out, err
}

// setFlags changes inode flags the way FS_IOC_SETFLAGS does for the btrfs
// specific bits: NODATACOW (and NODATASUM) of a regular file change only
// while it is empty, silently kept otherwise (the flag tells how the data
// is stored), and NODATACOW implies NODATASUM. mirrors btrfs_fileattr_set
func (o *op) setFlags(id ondisk.InodeRef, x *item.InodeItem, fl uint64) error {
	const settable = item.InodeNoDataSum | item.InodeNoDataCow | item.InodeNoCompress | item.InodeCompress |
		item.InodeSync | item.InodeImmutable | item.InodeAppend | item.InodeNoDump | item.InodeNoAtime | item.InodeDirSync
	if fl&^settable != 0 {
		return errf(syscall.EOPNOTSUPP, "set flags %#x on %v", fl, id)
	}
	const cowBits = item.InodeNoDataCow | item.InodeNoDataSum
	if isReg(x.Mode) && x.Size != 0 {
		fl = fl&^cowBits | x.Flags&cowBits
	} else if fl&item.InodeNoDataCow != 0 && isReg(x.Mode) {
		fl |= item.InodeNoDataSum
	}
	x.Flags = x.Flags&^settable | fl
	return nil
}
