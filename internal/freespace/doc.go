// Package freespace maintains the free space tree's records for one block
// group at a time, exactly as the kernel's fs/btrfs/free-space-tree.c does,
// so that Linux and `btrfs check` read our trees as their own.
//
// # Records
//
// Every block group has one FREE_SPACE_INFO item, key (start, 198, length),
// data {extent_count le32, flags le32}. Its free space is then held in one of
// two layouts, chosen by flags&FlagUsingBitmaps:
//
//   - extents: FREE_SPACE_EXTENT items, key (start, 199, length), no data; one
//     per maximal free range, never two adjacent (btrfs check calls that
//     "unmerged").
//   - bitmaps: FREE_SPACE_BITMAP items, key (start, 200, length), one for every
//     BitmapBits sectors of the group starting at the group's start (the last
//     may be shorter); data is one bit per sector, little-endian bit order,
//     set = free, ceil(sectors/8) bytes.
//
// extent_count is the number of maximal free ranges in either layout.
//
// # When the layout changes
//
// Thresholds mirrors btrfs_set_free_space_tree_thresholds: the extent layout
// costs sizeof(btrfs_item) = 25 bytes per range; the bitmap layout costs
// 25+256 bytes per bitmap. high = bitmaps*281/25, low = high-100 (0 if high
// <= 100). Only an operation that changes extent_count can convert: to bitmaps
// when extent_count > high, back to extents when extent_count < low
// (update_free_space_extent_count). Between low and high either layout may be
// found, depending on history.
//
// # Conversion with bounded memory (the question from the 2015 review)
//
// The kernel converts through a buffer holding the whole group's bitmap
// (256 bytes per bitmap: 32 KiB per GiB at 4 KiB sectors) so that it can
// delete every old record before inserting any new one; the tree never grows
// above its size when the conversion started. We convert one bitmap's range
// (a "window") at a time instead, holding one 256-byte bitmap, a batch of at
// most 64 keys, and a plan of about 32 bytes per window (counts and the
// records that cross window edges, never the free extents themselves).
//
// Bounded memory has a price the review asked about: there are layouts where
// converting any one window, or any run of windows short of the whole group,
// grows the tree, though the whole conversion shrinks it (TestConversionGrowth
// builds some). No scheme that holds less than the whole group avoids growing
// there. The plan keeps the growth small: it knows each window's exact size
// change, converts windows that do not grow the tree first, and otherwise
// starts where the savings it unlocks in linked neighbours pay back soonest
// (see pick). Inside a window, records are deleted before records are
// inserted. Measured: no growth in the random tests; 6 bytes (to bitmaps) and
// 19 bytes (to extents) in the constructed worst cases, less than one item
// header. The records it leaves are byte-for-byte the kernel's.
//
// # Editor
//
// The package reads and writes items through Editor, a small view of a B-tree
// in a transaction; it never holds on to data slices Range hands it.
package freespace
