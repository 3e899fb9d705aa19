// Package extent keeps the extent tree: one item per allocated extent with
// its reference count and back references, updated from the delayed ref
// queue at commit, with the block groups' used bytes and the free space tree
// kept in step; the checksum tree's items for data extents; and the
// reference updates that COW of shared tree blocks, snapshots and tree
// deletion need (the kernel's extent-tree.c, file-item.c's csum part and
// ctree.c's update_ref_for_cow).
//
// # Extent items
//
// A tree block has a METADATA_ITEM (bytenr, 169, level) on filesystems with
// SKINNY_METADATA, else an EXTENT_ITEM (bytenr, 168, nodesize) with a
// tree_block_info (first key, level). A data extent has an EXTENT_ITEM
// (bytenr, 168, length). The item holds the total count and, inline, back
// references sorted by type and then by descending offset (or
// hash_extent_data_ref for EXTENT_DATA_REF). When the item would grow past
// BTRFS_MAX_EXTENT_ITEM_SIZE, or a keyed back reference item already exists,
// new references go into keyed items (bytenr, TREE_BLOCK_REF|SHARED_BLOCK_REF|
// EXTENT_DATA_REF|SHARED_DATA_REF, root|parent|hash).
//
// # Tree block references
//
// A tree block of a tree that can be shared (subvolumes) is referenced
// either by its owner tree (TREE_BLOCK_REF root: "my parent is a block of
// tree root") or by its parent block (SHARED_BLOCK_REF parent) once the
// parent is marked FULL_BACKREF. UpdateRefForCow and DropTree implement the
// kernel's rules for moving between the two so that counts stay exact
// across snapshots.
package extent
