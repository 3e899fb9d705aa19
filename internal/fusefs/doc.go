// Package fusefs serves a btrfs image through FUSE (github.com/hanwen/go-fuse/v2/fs):
// the only place in gobtrfs where errors become syscall.Errno.
//
// # Two sides
//
// A read-only mount (-o ro) serves the read engine alone: internal/fsread
// (lookups by inode identity, extent-cached file reads with checksums)
// behind the small backend interface of backend.go. A read-write mount serves
// internal/fsops over internal/txn, with buffered writes in
// internal/pagecache.
//
// # Node identity
//
// Every subvolume's root directory is inode 256, and snapshots repeat inode
// numbers, so a FUSE node is named by (subvolume, inode). go-fuse reports
// StableAttr.Ino as st_ino, so that number must be unique over the mount:
// inodes of the mounted subvolume keep their btrfs number; those of other
// subvolumes are subvol<<40 | ino (see inomap.go). FUSE over /dev/fuse has
// one st_dev per mount (the kernel's FUSE submounts exist for virtio-fs only),
// so st_dev cannot differ per subvolume as it does on a kernel mount.
//
// # Buffered writes and the writeback list
//
// WRITE requests land in the page cache (pagecache.Cache.Write) and return.
// Dirty inodes sit on the cache's writeback list; they are written back
// (pagecache -> fsops.WriteAt with whole contiguous ranges, so a stream of
// 4 KiB writes becomes large extents: delayed allocation) by
//   - the flusher, every commit interval (-o commit=N, default 30 s), which
//     then commits the transaction;
//   - writers, when dirty memory passes the limit (in the background from
//     half the limit, synchronously above it);
//   - fsync (that inode, then a full commit), the last release of a file,
//     BTRFS_IOC_SYNC on any directory (`btrfs filesystem sync MNT`),
//     fsyncdir, and unmount (the whole list, then commit).
//
// Sync walks the writeback list only: clean cached inodes are never visited
// (seed 002); pagecache.Stats counts list adds, removals and what the last
// sync visited.
//
// A read combines the on-disk bytes with the dirty bytes laid over them.
// pagecache takes an inode's dirty spans off its list before handing them to
// the backend, so for a moment those bytes are in neither place; wbMu (an
// RWMutex) closes that window: readers and getattr hold it shared, every
// writeback holds it exclusively. Operations that change file data on disk
// directly (truncate, fallocate, clone) first write the inode back and hold
// wbMu exclusively too, so buffered bytes never land on top of them.
//
// # Unlinked open files
//
// fsops deletes an inode when its last name goes. A file that is still open
// (or an O_TMPFILE) first gets a hidden name in the subvolume's orphan
// directory (/.gobtrfs-orphans, hidden from lookup and readdir); the last
// release removes that name, which deletes the inode. A crash leaves the
// directory behind; the next read-write mount empties it.
package fusefs
