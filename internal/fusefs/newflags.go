package fusefs

import (
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// userFlags are the inode flags FS_IOC_SETFLAGS may set (fsops.Setattr
// refuses others).
const userFlags = item.InodeNoDataSum | item.InodeNoDataCow | item.InodeNoCompress | item.InodeCompress |
	item.InodeSync | item.InodeImmutable | item.InodeAppend | item.InodeNoDump | item.InodeNoAtime | item.InodeDirSync

// newFileFlags gives a new regular file the flags of -o nodatacow and
// -o nodatasum, as btrfs_new_inode does (ctime kept: it is the creation).
func (r *rwState) newFileFlags(f ondisk.InodeRef) error {
	var add uint64
	if r.m.opts.NoDataCow {
		add |= item.InodeNoDataCow | item.InodeNoDataSum
	}
	if r.m.opts.NoDataCsum {
		add |= item.InodeNoDataSum
	}
	if add == 0 {
		return nil
	}
	x, err := r.ops.Stat(f)
	if err != nil || x.Flags&add == add {
		return err
	}
	_, err = r.ops.Setattr(f, fsops.SetAttr{Valid: fsops.SetFlags | fsops.SetCtime, Flags: x.Flags&userFlags | add, Ctime: x.Ctime.Time()})
	return err
}
