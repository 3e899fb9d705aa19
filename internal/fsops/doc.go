// Package fsops applies file and directory operations to a writable btrfs
// filesystem, inside its subvolumes: creating, linking, renaming and
// removing names, inode attributes and xattrs, copy-on-write file data with
// inline, compressed and preallocated extents, hole punching, reflink
// clones and subvolumes (the kernel's inode.c, dir-item.c, xattr.c,
// file-item.c, file.c, reflink.c and the subvolume part of ioctl.c).
//
// Every operation is addressed by an ondisk.InodeRef (subvolume tree, inode number), or by
// a name in a parent directory, and runs in the current transaction of the
// underlying txn.Engine: it begins a handle, makes its changes and ends the
// handle. Changes reach the disk at Commit.
//
// Errors are syscall.Errno values wrapped with the operation and the object
// (errors.Is(err, syscall.ENOENT), which also satisfies fs.ErrNotExist).
// Operations validate before they modify, so a refused operation leaves the
// trees unchanged.
//
// Space: every operation that changes trees reserves its worst-case
// metadata first, and every operation that allocates data checks and
// allocates its data space before changing anything, so on a full
// filesystem it fails with ENOSPC (errors.Is(err, syscall.ENOSPC)) and
// changes nothing, instead of aborting the transaction; deletions reserve
// from the global reserve and keep working. Buffered writers hold data
// space for dirty data with ReserveData, and ask CanNocow only when that
// fails (see space.go).
package fsops
