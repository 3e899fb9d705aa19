// Package check checks a btrfs filesystem for consistency without changing
// it, as btrfs check --readonly does (btrfs-progs check/main.c and
// check/mode-lowmem.c). It opens an image with fsinfo, walks every tree
// once and cross-checks what it saw:
//
//  1. Tree structure, for every tree reachable from the superblock and the
//     root tree (subvolumes and snapshots, data reloc, reloc and log trees
//     included): each block readable with a valid checksum and passing the
//     tree-checker (diskio), its level, first key and generation matching
//     the key pointer that leads to it, its generation not newer than the
//     superblock, its owner plausible for the tree, item types in the tree
//     that may hold them.
//  2. Extent references: every reference the trees make - a key pointer to
//     a tree block, a ROOT_ITEM to a root block, a file extent item to a
//     data extent - is matched with a backref of the extent item, in the
//     form btrfs uses: keyed by the owner of the referring block
//     (TREE_BLOCK_REF root, EXTENT_DATA_REF root/ino/offset), or by the
//     referring block itself when that block has FULL_BACKREF (shared
//     refs). Each block is counted once however many snapshots share it.
//     Then the refs field must equal the backrefs' sum and the references
//     found, every backref must be matched, extents must not overlap.
//  3. Block groups: every extent inside a block group of the right type,
//     used equal to the extents' sizes, bytes_used of the superblock equal
//     to their sum.
//  4. Free space tree: per block group, the recorded free space equals the
//     block group minus its extent items (superblock mirror stripes may go
//     either way), extent_count and the bitmap flag agree with the records;
//     an entry for a block group that does not exist is an error, except
//     the all-free entries below the first block group that mkfs.btrfs 6.2
//     leaves for its deleted temporary chunks (a warning that says so).
//     The v1 free space cache: its inodes in the root tree have mode
//     0100600, each FREE_SPACE header points to one that exists.
//  5. Chunks and devices: chunk <-> block group <-> dev extent, dev extents
//     disjoint and inside the device, dev item bytes_used, sys_chunk_array
//     against the SYSTEM chunks. A multi-device filesystem is checked from
//     all the devices given (ImagesWith), each device's size and
//     superblocks against its dev item; a missing device is a warning, as
//     for btrfs check (data whose only copy is on it is counted as not
//     verified), unless a global tree's root is only on it (then, as
//     btrfs check cannot open the filesystem, the check fails).
//  6. Checksums: checksum items only over data extents (or data a pending
//     log tree refers to), regular extents of datasum inodes fully
//     checksummed, NODATASUM ones not at all; what a log tree logs has its
//     checksums in the log or the csum tree; with Options.CheckDataCsum,
//     the data itself against its checksums.
//  7. Inodes, per subvolume: INODE_REF/EXTREF <-> DIR_ITEM <-> DIR_INDEX
//     (name, index, type), nlink, directory isize, nbytes, file extents
//     (sizes, overlaps, gaps without NO_HOLES, inline limits), xattr types,
//     orphans (a directory awaiting orphan cleanup follows no name rules),
//     the root directory, no deprecated inode cache (FREE_INO items);
//     ROOT_REF <-> ROOT_BACKREF <-> the subvolume's entry in its parent.
//  8. Quota groups, when the quota tree exists: QGROUP_INFO referenced and
//     exclusive bytes of every level-0 and higher qgroup against the
//     extents each subvolume's tree reaches (skipped, with a warning, when
//     the status says a rescan runs or the counters are inconsistent);
//     limit and relation items that name no qgroup.
//  9. The superblock: generations, sizes, backup roots, mirrors.
//
// Each Problem names its class, the tree, the block and the item key. The
// checker never writes and never panics on bad data.
package check
