// Package treelog writes the log trees that make an fsync durable without
// a transaction commit, and replays the log trees an fsync left (ours or
// the kernel's: super log_root != 0) into the subvolume trees.
// mirrors fs/btrfs/tree-log.c (btrfs_log_inode_parent, btrfs_recover_log_trees)
//
// # Writing
//
// Writer.Fsync plans the log (see planner), copies the planned inodes'
// items through a scratch leaf prepared before the transaction handle is
// taken, builds the log trees in new blocks, and writes them and the
// superblock. Within a transaction it works on what changed since the
// last fsync: the plan is kept (the filesystem reports every inode it
// changes, Writer.Touched, and every directory index it inserts or
// deletes, Writer.DirIndexChanged), so planning and copying cost the
// inodes and directory entries changed (a directory fsync after an unlink
// in a large directory, as bonnie++ -b does, no longer reads the whole
// directory). Laying the leaves out still walks every logged item (cheaply:
// unchanged leaves are not copied or hashed), which is why a commit
// empties the log after maxTargets fsync'd inodes.
//
// Logged: regular files, symlinks and special files, new files and
// directories with their new ancestors, renames and hard links
// (the old directory gets a DIR_LOG_INDEX range without the old name),
// directory fsync (every entry, one range over all indexes, new children
// logged too), several subvolumes. Commits instead, with the reason
// counted: a name that the last commit gives another inode still alive, a
// new inode or name given the inode number or DIR_INDEX that the last
// commit gives another (fsops reuses both after removals), a new
// subvolume or a subvolume entry in a logged directory, a removed
// directory, a chunk of the running transaction, more than maxTargets
// fsync'd inodes in one transaction.
//
// # The format
//
// The log root tree (super.log_root, log_root_level) holds one ROOT_ITEM
// per subvolume with a log, keyed (TREE_LOG_OBJECTID, ROOT_ITEM, subvolume
// id); each points to that subvolume's log tree. A log tree holds copies of
// the fsync'd inodes' items (INODE_ITEM, INODE_REF/EXTREF, XATTR_ITEM,
// EXTENT_DATA), the directories' DIR_INDEX items with DIR_LOG_INDEX ranges
// saying which index ranges the log describes completely, and EXTENT_CSUM
// items (keyed as in the csum tree) for the logged data. Log tree blocks
// and the data extents only a log references have no extent items: they
// are kept from allocation while the log is read (pinned), and the blocks
// simply become free space again after the replay commits.
//
// # The stages
//
// As the kernel, Replay walks every log in stages, so that names can be
// resolved against inodes that exist by then:
//
//  1. inodes: each logged INODE_ITEM (nlink > 0) is copied; before that,
//     xattrs not in the log are deleted and, for directories, every name in
//     a logged DIR_LOG_INDEX range that the log does not hold is unlinked;
//     a regular file's extents past its logged size are dropped.
//  2. dir index: each logged DIR_INDEX name is added (conflicting names
//     unlinked) unless the target's logged refs will add it in stage 3.
//  3. everything else in key order: xattrs are copied; INODE_REF/EXTREF
//     names are linked (names of the same inode in the same directory that
//     the log does not have are unlinked); file extents replace the range
//     they cover, taking a reference on their data extent (inserting its
//     extent item when it has none) and copying the log's checksums.
//
// Finally every touched inode's link count is recounted from its refs (an
// orphan item is added when none is left), directory sizes and file
// nbytes are recomputed from the items, the log root is cleared and the
// transaction commits.
package treelog
