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
// (pagecache -> fsops.WriteAtTimes with contiguous ranges of up to 8 MiB,
// which keeps the times the writes had and joins a file's consecutive
// ranges into extents of up to 128 MiB: delayed allocation) by
//   - the flusher, every commit interval (-o commit=N, default 30 s), which
//     then commits the transaction;
//   - the flusher again, woken by writers when the bytes the cache holds
//     (dirty and in writeback, pagecache.Cache.Pending) pass half the
//     dirty limit (-o dirty_limit, default 256 MiB); it writes only what has settled (pagecache.SyncSettled:
//     not the last bytes of a stream, nor bytes after a hole whose WRITE is
//     still on its way, for up to 100 ms), so that a stream is not cut into
//     extents at every hole; and fsops grows a file's last extent on disk
//     when the next writeback continues it (fsops/tail.go), so a stream
//     written back in pieces still lands as extents of up to 128 MiB;
//   - writers above the limit wait for the flusher (as balance_dirty_pages
//     makes them), and write everything back themselves only when it does
//     not get under the limit within about 300 ms;
//   - fsync (that inode, then a full commit), the last release of a file,
//     BTRFS_IOC_SYNC on any directory (`btrfs filesystem sync MNT`),
//     fsyncdir, and unmount (the whole list, then commit).
//
// Sync walks the writeback list only: clean cached inodes are never visited
// (as the kernel's wait_sb_inodes walks only s_inodes_wb); pagecache.Stats
// counts list adds, removals and what the last sync visited.
//
// A read combines the on-disk bytes with the dirty bytes laid over them.
// pagecache moves an inode's dirty spans to its in-flight list, which reads
// still see, and hands them to the backend one at a time; while one is being
// written its bytes are in neither place. wbMu (an RWMutex) closes that
// window: readers and getattr hold it shared, a writeback holds it
// exclusively around each span's write (pagecache.SyncEach), so a read waits
// for one span at most, not for a whole sync. A read or getattr of an inode
// with nothing buffered (pagecache.Cache.Clean before and after it) takes
// no wbMu at all: no writeback can move its bytes under it. And one that
// finds the transaction lock taken (a commit settling, a writeback) reads
// the last commit's trees when that commit holds all of the inode
// (fsops.ReadInto, txn.View), so reads of committed data wait neither for
// writebacks of other files nor for commits. Operations that change file data on disk
// directly (truncate, fallocate, clone) first write the inode back and hold
// wbMu exclusively too, so buffered bytes never land on top of them.
//
// # Lock order
//
// A goroutine holding a lock takes only locks further down this list
// (outermost first); locks on one line are never held together. go-fuse's
// own locks come after all of ours: we call into go-fuse (NewInode, Parent)
// holding ours, and it calls our methods (OnForget too) holding none.
//
//  1. dirHandle.mu: one open directory; held while it loads, which ends by
//     updating the atime (accessed, under the data lock).
//  2. rwState.locks[i], the per-inode data lock (hashed by ID: write,
//     setattr, fallocate, copy_file_range, atime updates; copyRange takes
//     two, lower index first) | rwState.nsMu (create, tmpfile, link,
//     unlink, rmdir, rename, opendir/open, the last release of a file with
//     a hidden name).
//  3. rwState.wbMu: exclusive for each span's writeback and for changes of
//     file data on disk, shared by read, getattr and lookup (read and
//     getattr of an inode with nothing buffered skip it).
//  4. pagecache.Inode.mu: one inode's writeback, held across
//     Backend.WriteBack and so across the fsops calls it makes.
//  5. treelog.Writer.mu: fsync through the log tree (fsops.Fsync, called
//     after wbMu is released); it begins txn handles itself and, when it
//     falls back, commits through fsops.FS.Commit.
//  6. fsops.FS.mu: one fsops operation, a commit, or Close.
//  7. txn.Engine.mu: a transaction handle from Begin to End, or a commit;
//     taken by fsops inside its operations (SEEK_DATA/SEEK_HOLE too, through
//     fsops.FS.SeekData) and by treelog.Writer.
//  8. txn's log state lock: under a handle or commit, or alone (SyncLog).
//  9. Leaves, which call out to nothing while held: fsops.dataSpace.mu;
//     blockgroup.Manager.mu, then volume.ChunkMap.mu, then
//     blockgroup.DeviceSpace.mu; delayedref.Queue.mu; diskio.Reader.mu; the
//     fileread caches and warnMu; txn.Engine.statsMu and timerMu (never held
//     while waiting for the timer); the treelog stats lock; fsinfo's warnMu;
//     the blockdev locks.
//
// rwState.mu (the open-file table) is taken briefly under any of 1-4 and
// never held while calling fsops, the page cache's writeback or go-fuse;
// under it only pagecache.Cache.mu (Drop) is taken. pagecache.Cache.mu is
// taken last of all: the cache never holds it while calling its backend.
// inoMap.mu is a leaf. A read-only mount has only dirHandle.mu, then the
// read engine's locks (fsread.Engine's tree table, the extent map cache,
// the fileread caches, diskio.Reader.mu); roBackend.mu is a leaf (the table
// of inodes read for open files, never held while calling the engine).
//
// Two calls must not be made while holding a txn handle (txn.Engine.mu is
// not reentrant): fsops (it begins its own handle) and
// txn.Engine.Commit/Super.
//
// # Unlinked open files
//
// fsops deletes an inode when its last name goes, unless it is still open
// (rwState.inUse): then, as on the kernel's btrfs, it stays with nlink 0 and
// an ORPHAN_ITEM, and its last release deletes it; an O_TMPFILE starts that
// way. A crash leaves the orphan behind, and the next read-write mount, the
// kernel's or ours, deletes it (fsops/orphan.go).
package fusefs
